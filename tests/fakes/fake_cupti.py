"""A fake ``cupti.cupti`` (NVIDIA cupti-python) at the CUPTI boundary, for CPU-only tests.

It mirrors the parts of cupti-python 13.x that gpuscope uses, as declared in the package's
``cupti/cupti.pyi``: ``activity_register_callbacks(func_buffer_requested,
func_buffer_completed)``, ``activity_enable(kind)``, ``activity_disable(kind)``,
``activity_flush_all(flag)``, ``get_timestamp()``, ``get_callback_name(domain, cbid)``, the
``ActivityKind`` / ``ActivityMemcpyKind`` / ``ActivityMemoryKind`` / ``CallbackDomain`` enums
with CUPTI's C values, ``cuptiError``, and activity records whose attribute names are those of
``ActivityKernel9``, ``ActivityMemcpy6``, ``ActivityMemset4`` and ``ActivityAPI``.  Records are
delivered to the completed-buffer callback when the test "flushes", like CUPTI does.
"""

from __future__ import annotations

import enum
import sys
import types
from types import SimpleNamespace
from typing import Any


class ActivityKind(enum.IntEnum):  # CUpti_ActivityKind
    INVALID = 0
    MEMCPY = 1
    MEMSET = 2
    KERNEL = 3
    DRIVER = 4
    RUNTIME = 5
    CONCURRENT_KERNEL = 10


class ActivityMemcpyKind(enum.IntEnum):  # CUpti_ActivityMemcpyKind
    UNKNOWN = 0
    HTOD = 1
    DTOH = 2
    HTOA = 3
    ATOH = 4
    ATOA = 5
    ATOD = 6
    DTOA = 7
    DTOD = 8
    HTOH = 9
    PTOP = 10


class ActivityMemoryKind(enum.IntEnum):  # CUpti_ActivityMemoryKind
    UNKNOWN = 0
    PAGEABLE = 1
    PINNED = 2
    DEVICE = 3
    ARRAY = 4
    MANAGED = 5
    DEVICE_STATIC = 6
    MANAGED_STATIC = 7


class CallbackDomain(enum.IntEnum):  # CUpti_CallbackDomain
    INVALID = 0
    DRIVER_API = 1
    RUNTIME_API = 2
    RESOURCE = 3
    SYNCHRONIZE = 4
    NVTX = 5


class cuptiError(Exception):  # the real name
    def __init__(self, status: int) -> None:
        super().__init__(f"CUPTI error {status}")
        self.status = status


RUNTIME_NAMES = {211: "cudaLaunchKernel_v7000", 31: "cudaMemcpy_v3020", 41: "cudaMemset_v3020"}


class FakeCupti(types.ModuleType):
    """The fake ``cupti.cupti`` module; ``timestamp`` is the CUPTI clock (ns)."""

    ActivityKind = ActivityKind
    ActivityMemcpyKind = ActivityMemcpyKind
    ActivityMemoryKind = ActivityMemoryKind
    CallbackDomain = CallbackDomain
    cuptiError = cuptiError

    def __init__(self) -> None:
        super().__init__("cupti.cupti")
        self.timestamp = 5_000_000_000
        self.enabled: set[int] = set()
        self.requested: Any = None
        self.completed: Any = None
        self.pending: list[Any] = []
        self.flushes = 0
        self.fail_enable: int | None = None

    # -- the API -----------------------------------------------------------------------
    def activity_register_callbacks(self, func_buffer_requested: Any, func_buffer_completed: Any):
        self.requested, self.completed = func_buffer_requested, func_buffer_completed

    def activity_enable(self, kind: int) -> None:
        if self.fail_enable is not None:
            raise cuptiError(self.fail_enable)
        self.enabled.add(int(kind))

    def activity_disable(self, kind: int) -> None:
        self.enabled.discard(int(kind))

    def activity_flush_all(self, flag: int) -> None:
        self.flushes += 1
        if self.pending and self.completed is not None:
            size, _max_records = self.requested()
            assert size > 0
            batch, self.pending = self.pending, []
            self.completed(batch)

    def get_timestamp(self) -> int:
        return self.timestamp

    def get_callback_name(self, domain: int, cbid: int) -> str:
        if domain != CallbackDomain.RUNTIME_API:
            raise cuptiError(1)
        return RUNTIME_NAMES[cbid]

    # -- test helpers: what a CUDA program would make CUPTI record ---------------------
    def _record(self, kind: ActivityKind, rec: SimpleNamespace) -> None:
        if int(kind) in self.enabled:
            self.pending.append(rec)

    def _runtime_call(self, cbid: int, api_start: int, api_end: int, corr: int) -> None:
        self._record(
            ActivityKind.RUNTIME,
            SimpleNamespace(
                kind=int(ActivityKind.RUNTIME), cbid=cbid, start=api_start, end=api_end,
                process_id=4242, thread_id=4243, correlation_id=corr, return_value=0,
            ),
        )  # fmt: skip

    def launch_kernel(self, name: str, start: int, end: int, *, corr: int, stream: int = 7,
                      device: int = 0, api_start: int, api_end: int) -> None:  # fmt: skip
        self._runtime_call(211, api_start, api_end, corr)
        self._record(
            ActivityKind.CONCURRENT_KERNEL,
            SimpleNamespace(
                kind=int(ActivityKind.CONCURRENT_KERNEL), name=name, start=start, end=end,
                device_id=device, context_id=1, stream_id=stream, correlation_id=corr,
                grid_x=108, grid_y=2, grid_z=1, block_x=256, block_y=1, block_z=1,
                registers_per_thread=40, static_shared_memory=1024,
                dynamic_shared_memory=4096,
            ),
        )  # fmt: skip

    def memcpy(self, nbytes: int, start: int, end: int, *, corr: int, copy_kind: int,
               api_start: int, api_end: int, stream: int = 7) -> None:  # fmt: skip
        self._runtime_call(31, api_start, api_end, corr)
        self._record(
            ActivityKind.MEMCPY,
            SimpleNamespace(
                kind=int(ActivityKind.MEMCPY), copy_kind=copy_kind,
                src_kind=int(ActivityMemoryKind.PINNED), dst_kind=int(ActivityMemoryKind.DEVICE),
                bytes=nbytes, start=start, end=end, device_id=0, context_id=1, stream_id=stream,
                correlation_id=corr,
            ),
        )  # fmt: skip

    def memset(self, nbytes: int, start: int, end: int, *, corr: int, stream: int = 7) -> None:
        self._record(
            ActivityKind.MEMSET,
            SimpleNamespace(
                kind=int(ActivityKind.MEMSET), bytes=nbytes, value=0, start=start, end=end,
                device_id=0, context_id=1, stream_id=stream, correlation_id=corr,
                memory_kind=int(ActivityMemoryKind.DEVICE),
            ),
        )  # fmt: skip


def install(monkeypatch: Any) -> FakeCupti:
    """Make ``from cupti import cupti`` return a fresh fake (undone by *monkeypatch*)."""
    fake = FakeCupti()
    pkg = types.ModuleType("cupti")
    pkg.cupti = fake  # type: ignore[attr-defined]
    pkg.__path__ = []  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupti", pkg)
    monkeypatch.setitem(sys.modules, "cupti.cupti", fake)
    return fake
