"""Freed heap pages handed back (:mod:`collectors.heap`): glibc's ``malloc_trim`` where the C
library has it, looked up once; nothing elsewhere."""

from __future__ import annotations

import os
import sys

import pytest

from collectors import heap


def _resident_kib() -> int:
    with open(f"/proc/{os.getpid()}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not os.confstr("CS_GNU_LIBC_VERSION"),
    reason="malloc_trim is glibc's (this C library is not)",
)
def test_freed_heap_pages_go_back_to_the_system(monkeypatch) -> None:
    monkeypatch.setattr(heap, "_TRIM", [])
    heap.release_freed_memory()  # whatever an earlier test left in the heap
    blocks = [bytearray(64 << 10) for _ in range(1600)]  # 100 MiB of heap-sized blocks
    keep = blocks[-1]  # the heap's top stays in use: only a trim gives the rest back
    del blocks
    before = _resident_kib()
    heap.release_freed_memory()
    assert before - _resident_kib() > 50 << 10
    assert heap._TRIM[0] is not None and len(keep) == 64 << 10


def test_no_c_library_trim_elsewhere_is_a_no_op(monkeypatch) -> None:
    monkeypatch.setattr(heap, "_TRIM", [])
    monkeypatch.setattr(heap.sys, "platform", "darwin")
    heap.release_freed_memory()
    heap.release_freed_memory()
    assert heap._TRIM == [None]
