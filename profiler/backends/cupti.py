"""CUPTI activity tracing through NVIDIA's ``cupti-python`` (for programs that do not use torch).

:class:`CuptiCapture` enables CUPTI's activity API for kernels (``CONCURRENT_KERNEL``),
memory copies, memsets and CUDA runtime calls, collects the records CUPTI hands back in its
buffer-completed callback, and :func:`profiler.backends.cupti_events.to_kineto_events` turns
them into Kineto-format trace events (the layout ``torch.profiler`` writes, so the Kineto reader
reads them unchanged):

=================  ============  =========================================================
CUPTI record       Kineto cat    pid / tid, args
=================  ============  =========================================================
kernel             kernel        device / stream; device, stream, correlation, grid, block,
                                 registers per thread, shared memory (static + dynamic)
memcpy             gpu_memcpy    device / stream; bytes, memory bandwidth (GB/s)
memset             gpu_memset    device / stream; bytes
runtime API call   cuda_runtime  process / thread; cbid, correlation
=================  ============  =========================================================

``ac2g`` flow events link each runtime call to the GPU activity with the same correlation id.
CUPTI timestamps (ns, CUPTI's clock) are moved onto the Unix epoch by one offset measured at
:meth:`CuptiCapture.start` (``time.time_ns() - cupti.get_timestamp()``, read back to back).

``cupti-python`` is optional: :func:`load_cupti` raises :class:`MissingDependencyError` when it is
absent; the profiler then falls back to host-only capture.  :class:`CuptiBackend` runs a capture
over a session's step window (:mod:`profiler.backends.protocol`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from collectors.errors import MissingDependencyError
from profiler.backends.host import HostBackend
from profiler.backends.protocol import SessionContext

MAX_RECORDS = 5_000_000
"""Records kept per capture; more are counted in ``dropped`` (bounds memory)."""

_COPY_KIND = {
    "HTOD": "HtoD",
    "DTOH": "DtoH",
    "HTOA": "HtoA",
    "ATOH": "AtoH",
    "ATOA": "AtoA",
    "ATOD": "AtoD",
    "DTOA": "DtoA",
    "DTOD": "DtoD",
    "HTOH": "HtoH",
    "PTOP": "PtoP",
}
_MEM_KIND = {
    "PAGEABLE": "Pageable",
    "PINNED": "Pinned",
    "DEVICE": "Device",
    "ARRAY": "Array",
    "MANAGED": "Managed",
    "DEVICE_STATIC": "Device Static",
    "MANAGED_STATIC": "Managed Static",
}


def load_cupti() -> Any:
    """The ``cupti.cupti`` binding module.

    Raises:
        MissingDependencyError: ``cupti-python`` is not installed (or its CUDA libraries are
            missing).
    """
    try:
        from cupti import cupti
    except Exception as e:  # ImportError, or OSError from a missing libcupti
        raise MissingDependencyError(
            f"CUPTI backend needs NVIDIA's cupti-python (pip install cupti-python): {e}"
        ) from None
    return cupti


def _enum_name(enum: Any, value: int) -> str | None:
    try:
        return str(enum(value).name)
    except Exception:
        return None


class CuptiCapture:
    """Collects CUPTI activity records between :meth:`start` and :meth:`stop`.

    Args:
        cupti: the ``cupti.cupti`` module (tests pass a fake); loaded with :func:`load_cupti`
            when None.
        unix_clock: the wall clock used for the timestamp offset.
        driver_api: also record driver API calls (``cuda_driver``; many records).
    """

    def __init__(
        self,
        cupti: Any = None,
        *,
        unix_clock: Callable[[], int] = time.time_ns,
        driver_api: bool = False,
    ) -> None:
        self.cupti = cupti
        self._unix_clock = unix_clock
        self._driver_api = driver_api
        self._kinds: list[Any] = []
        self._lock = threading.Lock()
        self.records: list[dict[str, Any]] = []
        self.dropped = 0
        self.offset_ns = 0
        """Add to a CUPTI timestamp to get Unix-epoch ns."""
        self.started = False

    def start(self) -> None:
        """Register the buffer callbacks and enable the activity kinds.

        Raises:
            MissingDependencyError: no ``cupti-python``.
            Exception: whatever CUPTI raises when it cannot enable tracing (the profiler
                records it and captures without GPU activities).
        """
        c = self.cupti = self.cupti or load_cupti()
        k = c.ActivityKind
        self._kinds = [k.CONCURRENT_KERNEL, k.MEMCPY, k.MEMSET, k.RUNTIME]
        if self._driver_api:
            self._kinds.append(k.DRIVER)
        c.activity_register_callbacks(self._buffer_requested, self._buffer_completed)
        for kind in self._kinds:
            c.activity_enable(kind)
        self.offset_ns = self._unix_clock() - int(c.get_timestamp())
        self.started = True

    def stop(self) -> list[dict[str, Any]]:
        """Flush CUPTI's buffers, disable the kinds; returns the records collected."""
        if not self.started:
            return self.records
        c = self.cupti
        self.started = False
        try:
            c.activity_flush_all(1)
        finally:
            for kind in self._kinds:
                try:
                    c.activity_disable(kind)
                except Exception:
                    continue
        return self.records

    @staticmethod
    def _buffer_requested() -> tuple[int, int]:
        return 8 * 1024 * 1024, 0  # buffer size, no record limit

    def _buffer_completed(self, activities: Iterable[Any]) -> None:
        # called by CUPTI (possibly on its own thread); copy the fields out at once
        out = []
        for a in activities:
            try:
                r = self._convert(a)
            except Exception:
                r = None
            if r is not None:
                out.append(r)
        with self._lock:
            room = MAX_RECORDS - len(self.records)
            self.records.extend(out[: max(room, 0)])
            self.dropped += max(len(out) - max(room, 0), 0)

    def _convert(self, a: Any) -> dict[str, Any] | None:
        c = self.cupti
        k = c.ActivityKind
        kind = a.kind
        if kind in (k.CONCURRENT_KERNEL, getattr(k, "KERNEL", -1)):
            return {
                "kind": "kernel",
                "name": str(a.name),
                **_gpu_fields(a),
                "grid": [int(a.grid_x), int(a.grid_y), int(a.grid_z)],
                "block": [int(a.block_x), int(a.block_y), int(a.block_z)],
                "registers": int(a.registers_per_thread),
                "static_smem": int(a.static_shared_memory),
                "dynamic_smem": int(a.dynamic_shared_memory),
            }
        if kind == k.MEMCPY:
            ck = _enum_name(c.ActivityMemcpyKind, int(a.copy_kind))
            src = _enum_name(getattr(c, "ActivityMemoryKind", None), int(a.src_kind))
            dst = _enum_name(getattr(c, "ActivityMemoryKind", None), int(a.dst_kind))
            return {
                "kind": "memcpy",
                "copy_kind": _COPY_KIND.get(ck or "", ck),
                "src_kind": _MEM_KIND.get(src or "", src),
                "dst_kind": _MEM_KIND.get(dst or "", dst),
                "bytes": int(a.bytes),
                **_gpu_fields(a),
            }
        if kind == k.MEMSET:
            return {
                "kind": "memset",
                "bytes": int(a.bytes),
                **_gpu_fields(a),
            }
        if kind in (k.RUNTIME, k.DRIVER):
            runtime = kind == k.RUNTIME
            dom = c.CallbackDomain.RUNTIME_API if runtime else c.CallbackDomain.DRIVER_API
            try:
                name = str(c.get_callback_name(dom, int(a.cbid)))
            except Exception:
                name = f"cbid {int(a.cbid)}"
            return {
                "kind": "runtime" if runtime else "driver",
                "name": name,
                "cbid": int(a.cbid),
                "start": int(a.start),
                "end": int(a.end),
                "pid": int(a.process_id),
                "tid": int(a.thread_id),
                "correlation": int(a.correlation_id),
            }
        return None


def _gpu_fields(a: Any) -> dict[str, int]:
    """Time span, device, stream and correlation id of a GPU activity record."""
    return {
        "start": int(a.start),
        "end": int(a.end),
        "device": int(a.device_id),
        "stream": int(a.stream_id),
        "correlation": int(a.correlation_id),
    }


class CuptiBackend(HostBackend):
    """The CUPTI backend: the host backend's steps and regions, plus the GPU activity CUPTI
    records over the window (:class:`CuptiCapture`), in one trace."""

    name = "cupti"

    def __init__(self, context: SessionContext) -> None:
        super().__init__(context)
        self._capture: CuptiCapture | None = None

    def window_begin(self) -> None:
        super().window_begin()
        try:
            self._capture = CuptiCapture()
            self._capture.start()
        except Exception as e:
            self.context.report("CUPTI", e)
            self._capture = None

    def window_end(self, partial_until_ns: int | None) -> None:
        self._cut(partial_until_ns)
        records: list[dict[str, Any]] = []
        capture, self._capture = self._capture, None
        if capture is not None:
            try:
                records = capture.stop()
            except Exception as e:
                self.context.report("CUPTI", e)
        self._write(records, capture.offset_ns if capture is not None else 0)
        if capture is not None and capture.dropped:
            self.context.report("CUPTI", f"{capture.dropped} records dropped (buffer limit)")

    def cancel(self) -> None:
        super().cancel()
        if self._capture is not None:
            with contextlib.suppress(Exception):
                self._capture.stop()
            self._capture = None
