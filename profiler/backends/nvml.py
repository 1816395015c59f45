"""The NVML sampler backend (``nvidia-ml-py``, module ``pynvml``) and the counter file it writes.

One :class:`NvmlSampler` runs per node (in local rank 0): a background thread that, at a fixed
rate (default 10 Hz), reads every NVIDIA GPU of the node and appends rows to a gzip'd CSV in
long format, one row per reading::

    t_mono_ns,t_unix_ns,gpu,field,value

``t_mono_ns`` is ``time.perf_counter_ns()`` (CLOCK_MONOTONIC) of the sampling process and
``t_unix_ns`` the same instant on the Unix epoch (one anchor pair per session, so both clocks
advance identically); ``gpu`` is the NVML device index (-1 for rows that are not per device).

Fields (units in the name; NVML semantics in ``../shared/reference/nvml.md``):

=====================  ==========================================================================
field                  meaning
=====================  ==========================================================================
power_instant_mw       instantaneous board power (field ``NVML_FI_DEV_POWER_INSTANT``), mW
power_usage_mw         ``nvmlDeviceGetPowerUsage`` (1 s average on Ampere+), only when the
                       instantaneous field is not supported
energy_mj              total energy since the driver loaded (field ``…TOTAL_ENERGY_CONSUMPTION``,
                       else ``nvmlDeviceGetTotalEnergyConsumption``), mJ, monotone counter
memory_temp_c          HBM temperature (field ``NVML_FI_DEV_MEMORY_TEMP``), °C
nvlink_tx_kib          NVLink data transmitted, summed over the device's links (field
nvlink_rx_kib          ``…NVLINK_THROUGHPUT_DATA_TX/RX`` per link), KiB counter as reported
gpu_util_pct           % of the driver's sample period with at least one kernel running
mem_util_pct           % of that period device memory was read or written
mem_used_bytes         framebuffer memory in use
sm_clock_mhz           current SM clock
mem_clock_mhz          current memory clock
clock_event_reasons    bitmask of ``nvmlDeviceGetCurrentClocksEventReasons`` (0x1 idle, 0x4 SW
                       power cap, 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 power
                       brake, …)
gpu_temp_c             GPU die temperature
pcie_tx_kbps           ``nvmlDeviceGetPcieThroughput`` TX/RX (KB/s over NVML's 20 ms window),
pcie_rx_kbps           read at most once a second
gpm_*                  Hopper+ GPM metrics averaged between two GPM samples (~0.5 s apart):
                       ``gpm_sm_util_pct``, ``gpm_sm_occupancy_pct``, ``gpm_tensor_active_pct``,
                       ``gpm_dram_bw_util_pct``, ``gpm_pcie_tx_mibps``, ``gpm_pcie_rx_mibps``,
                       ``gpm_nvlink_tx_mibps``, ``gpm_nvlink_rx_mibps``
step_begin             ``gpu`` -1, value k: step k begins here (session start, then every
                       ``profiler.step()``); the energy counter is read right after each one
=====================  ==========================================================================

Cheap per-device values are read with one batched ``nvmlDeviceGetFieldValues`` call per device
per tick.  A reading that fails with NOT_SUPPORTED / FUNCTION_NOT_FOUND / NO_PERMISSION is not
attempted again on that device; any other error is counted and sampling goes on.  A missing
library or device makes the sampler *unavailable* (recorded, never raised).

:class:`NvmlBackend` runs a sampler for a capture session (:mod:`profiler.session`); the file is
read back by :func:`collectors.nvml.read_counters`.
"""

from __future__ import annotations

import contextlib
import gzip
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from collectors.nvml import CSV_HEADER
from profiler.backends.nvml_device import (
    GPM_MIN_INTERVAL_S,
    LOST_AFTER_FAILED_POLLS,
    PCIE_MIN_INTERVAL_S,
    DeviceReadings,
    _Device,
    _text,
)
from profiler.backends.protocol import SessionContext


class NvmlSampler(DeviceReadings):
    """Background NVML sampler writing ``path`` (gzip'd long-format CSV).

    Args:
        path: the counter file, e.g. ``RUN/counters/<host>.csv.gz``.
        hz: polls per second (> 0).
        nvml: the ``pynvml`` module (tests pass a fake); imported lazily when None.
        clock: monotonic clock in ns (``time.perf_counter_ns``).
        time_base: ``(mono_ns, unix_ns)`` anchor mapping ``clock`` to the Unix epoch; taken
            at :meth:`open` when None.
        flush_interval_s: how often buffered rows reach the file (a crash loses at most this).

    Never raises after construction: problems end up in :meth:`status`.
    """

    def __init__(
        self,
        path: str | Path,
        hz: float = 10.0,
        *,
        nvml: Any = None,
        clock: Callable[[], int] = time.perf_counter_ns,
        time_base: tuple[int, int] | None = None,
        flush_interval_s: float = 1.0,
    ) -> None:
        self.path = Path(path)
        self.hz = float(hz)
        self._nvml = nvml
        self._clock = clock
        self._time_base = time_base
        self._flush_interval_ns = int(flush_interval_s * 1e9)
        self._devices: list[_Device] = []
        self._rows: list[str] = []
        self._file: Any = None
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._stopping = False
        self._marks: deque[tuple[int, int]] = deque()
        self._lock = threading.Lock()
        self._initialized = False
        self._closed = False
        self._last_flush = 0
        self._last_gpm = -(10**18)
        self._last_pcie = -(10**18)
        self._st: dict[str, Any] = {
            "available": False,
            "reason": "not started",
            "hz": self.hz,
            "file": None,
            "driver_version": None,
            "devices": [],
            "polls": 0,
            "rows": 0,
            "cpu_ns_total": 0,
            "wall_ns_total": 0,
            "wall_ns_max": 0,
            "errors": {},
            "started_unix_ns": None,
            "stopped_unix_ns": None,
        }

    # ----------------------------------------------------------------- lifecycle
    def open(self) -> bool:
        """Initialise NVML and find the devices; True when sampling is possible."""
        try:
            return self._open()
        except Exception as e:  # never into the training process
            self._unavailable(f"{type(e).__name__}: {e}")
            return False

    def _open(self) -> bool:
        if self._nvml is None:
            try:
                import pynvml
            except ImportError:
                self._unavailable("nvidia-ml-py (pynvml) is not installed")
                return False
            self._nvml = pynvml
        n = self._nvml
        if self._time_base is None:
            self._time_base = (self._clock(), time.time_ns())
        try:
            n.nvmlInit()
        except Exception as e:
            self._unavailable(_text(e) or type(e).__name__)
            return False
        self._initialized = True
        try:
            count = n.nvmlDeviceGetCount()
        except Exception as e:
            self._unavailable(f"nvmlDeviceGetCount: {e}")
            self._shutdown()
            return False
        if count == 0:
            self._unavailable("no NVIDIA GPU on this node")
            self._shutdown()
            return False
        with contextlib.suppress(Exception):
            self._st["driver_version"] = _text(n.nvmlSystemGetDriverVersion())
        for i in range(count):
            try:
                self._devices.append(self._describe(i, n.nvmlDeviceGetHandleByIndex(i)))
            except Exception as e:
                self._count_error(e)
        if not self._devices:
            self._unavailable("no NVIDIA GPU could be opened")
            self._shutdown()
            return False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = gzip.open(  # noqa: SIM115 - open for the sampler's lifetime
                self.path, "wt", encoding="utf-8", newline=""
            )
            self._file.write(CSV_HEADER)
        except OSError as e:
            self._unavailable(f"cannot write {self.path}: {e}")
            self._shutdown()
            return False
        self._st.update(
            available=True,
            reason=None,
            file=str(self.path),
            devices=[d.info for d in self._devices],
            started_unix_ns=self._unix(self._clock()),
        )
        self._last_flush = self._clock()
        return True

    def start(self) -> bool:
        """:meth:`open`, then sample on a daemon thread; True when sampling."""
        if not self.open():
            return False
        self._thread = threading.Thread(target=self._loop, name="gpuscope-nvml", daemon=True)
        self._thread.start()
        return True

    def stop(self, timeout_s: float = 5.0) -> dict[str, Any]:
        """Stop the thread, take a last reading, close the file and NVML; returns status."""
        if self._thread is not None:
            self._stopping = True
            self._wake.set()
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                self._count_error(TimeoutError("sampler thread did not stop in time"))
                return self.status()
            self._thread = None
        else:
            self.close()
        return self.status()

    def close(self) -> None:
        """Final reading, flush, close the file, free GPM samples, ``nvmlShutdown``."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._st["available"]:
                self._drain_marks()
                self.poll()
                self._flush(force=True)
                self._file.close()
                self._file = None
                self._st["stopped_unix_ns"] = self._unix(self._clock())
            for d in self._devices:
                if d.gpm_samples:
                    for s in d.gpm_samples:
                        with contextlib.suppress(Exception):
                            self._nvml.nvmlGpmSampleFree(s)
                    d.gpm_samples = None
        except Exception as e:
            self._count_error(e)
        self._shutdown()

    def _shutdown(self) -> None:
        if self._initialized:
            self._initialized = False
            try:
                self._nvml.nvmlShutdown()
            except Exception as e:
                self._count_error(e)

    def _loop(self) -> None:
        period = int(1e9 / self.hz) if self.hz > 0 else int(1e9)
        next_t = self._clock()
        while True:
            try:
                wait_s = max(0.0, (next_t - self._clock()) / 1e9)
                self._wake.wait(wait_s)
                self._wake.clear()
                if self._stopping:
                    break
                self._drain_marks()
                now = self._clock()
                if now >= next_t:
                    self.poll()
                    next_t += period
                    if next_t <= now:
                        next_t = now + period
                self._flush()
            except Exception as e:  # keep sampling whatever happens
                self._count_error(e)
                time.sleep(0.01)
        self.close()

    # ----------------------------------------------------------------- readings
    def mark_step(self, step: int, t_mono_ns: int | None = None) -> None:
        """Step *step* begins at *t_mono_ns*: write a ``step_begin`` row, read energy at once.

        Cheap for the caller: with the thread running it only queues the mark and wakes it.
        """
        if not self._st["available"] or self._closed:
            return
        t = self._clock() if t_mono_ns is None else int(t_mono_ns)
        self._marks.append((int(step), t))
        if self._thread is not None:
            self._wake.set()
        else:
            self._drain_marks()

    def _drain_marks(self) -> None:
        while self._marks:
            step, t = self._marks.popleft()
            with self._lock:
                self._rows.append(f"{t},{self._unix(t)},-1,step_begin,{step}\n")
            for d in self._devices:
                if not d.lost:
                    self._read_energy(d)

    def poll(self) -> None:
        """One reading of every device (called by the thread; tests call it directly)."""
        if not self._st["available"]:
            return
        c0 = time.thread_time_ns()
        w0 = self._clock()
        now = w0
        do_gpm = (now - self._last_gpm) >= GPM_MIN_INTERVAL_S * 1e9
        do_pcie = (now - self._last_pcie) >= PCIE_MIN_INTERVAL_S * 1e9
        for d in self._devices:
            if d.lost:
                continue
            ok = self._poll_device(d, do_pcie)
            if do_gpm and d.gpm_samples:
                ok = self._poll_gpm(d) or ok
            d.failed_polls = 0 if ok else d.failed_polls + 1
            if d.failed_polls >= LOST_AFTER_FAILED_POLLS:
                d.lost = True
                self._st.setdefault("lost_devices", []).append(d.index)
        if do_gpm:
            self._last_gpm = now
        if do_pcie:
            self._last_pcie = now
        w1 = self._clock()
        st = self._st
        st["polls"] += 1
        st["cpu_ns_total"] += time.thread_time_ns() - c0
        st["wall_ns_total"] += w1 - w0
        st["wall_ns_max"] = max(st["wall_ns_max"], w1 - w0)

    # ----------------------------------------------------------------- bookkeeping
    def _unix(self, t_mono: int) -> int:
        assert self._time_base is not None
        return self._time_base[1] + (t_mono - self._time_base[0])

    def _emit(self, t: int, gpu: int, name: str, value: float) -> None:
        v = int(value) if value.is_integer() else value
        with self._lock:
            self._rows.append(f"{t},{self._unix(t)},{gpu},{name},{v!r}\n")

    def _flush(self, force: bool = False) -> None:
        now = self._clock()
        if not force and now - self._last_flush < self._flush_interval_ns:
            return
        with self._lock:
            rows, self._rows = self._rows, []
        self._last_flush = now
        if rows and self._file is not None:
            try:
                self._file.write("".join(rows))
                self._file.flush()
                self._st["rows"] += len(rows)
            except Exception as e:
                self._count_error(e)

    def _count_error(self, err: BaseException) -> None:
        key = _text(err) or type(err).__name__
        errs = self._st["errors"]
        errs[key] = errs.get(key, 0) + 1

    def _unavailable(self, reason: str) -> None:
        self._st.update(available=False, reason=reason)

    def status(self) -> dict[str, Any]:
        """JSON-ready status: availability (and why not), devices, poll count and own cost.

        ``cpu_ns_per_poll`` is the sampler thread's CPU time per poll
        (``time.thread_time_ns``); ``wall_ns_per_poll`` its wall time per poll.
        """
        st = dict(self._st)
        polls = st["polls"]
        st["cpu_ns_per_poll"] = st["cpu_ns_total"] // polls if polls else None
        st["wall_ns_per_poll"] = st["wall_ns_total"] // polls if polls else None
        st["devices"] = [dict(d.info) for d in self._devices]
        st["errors"] = dict(st["errors"])
        return st


class NvmlBackend:
    """The NVML sampler of a session (run by local rank 0 of each node): a
    :class:`NvmlSampler` from the session's start to its stop, with a ``step_begin`` mark at
    every step boundary; not tied to the step window."""

    name = "nvml"

    def __init__(self, context: SessionContext, path: Path, hz: float) -> None:
        self.context = context
        self._sampler = NvmlSampler(path, hz, time_base=context.time_base)
        self._running = False
        self._status: dict[str, Any] | None = None
        self._step = 0

    def start(self, step: int, t_ns: int) -> None:
        self._step = step
        if self._sampler.start():
            self._running = True
            self._sampler.mark_step(step, t_ns)
        else:
            self._status = self._sampler.status()

    def step(self, step: int, t_ns: int) -> None:
        self._step = step
        if self._running:
            self._sampler.mark_step(step, t_ns)

    def window_begin(self) -> None:
        """Nothing to do: the sampler runs over the whole session."""

    def window_end(self, partial_until_ns: int | None) -> None:
        """Nothing to do: the sampler runs over the whole session."""

    def stop(self, t_ns: int) -> None:
        """The last boundary (the running step ends at *t_ns*), then the sampler stops."""
        if not self._running:
            return
        self._running = False
        self._sampler.mark_step(self._step + 1, t_ns)
        self._status = self._sampler.stop()

    def cancel(self) -> None:
        """Nothing to drop: the samples do not depend on the window."""

    def result(self) -> dict[str, Any]:
        """``nvml``: the sampler's status (:meth:`NvmlSampler.status`), live while it runs."""
        return {"nvml": self._sampler.status() if self._running else self._status}
