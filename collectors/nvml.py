"""NVML counter sampling (``nvidia-ml-py``, module ``pynvml``) and the counter file it writes.

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
"""

from __future__ import annotations

import contextlib
import gzip
import io
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from collectors.errors import InputError
from collectors.model import counter_table

CSV_HEADER = "t_mono_ns,t_unix_ns,gpu,field,value\n"

# NVML constants (values from nvidia-ml-py 13.615.71; also read from the module when present)
_FI_ENERGY = 83
_FI_MEMORY_TEMP = 82
_FI_NVLINK_LINK_COUNT = 91
_FI_NVLINK_TX = 138
_FI_NVLINK_RX = 139
_FI_POWER_INSTANT = 186

_UNSUPPORTED_CODES = frozenset({2, 3, 4, 13})
"""INVALID_ARGUMENT, NOT_SUPPORTED, NO_PERMISSION, FUNCTION_NOT_FOUND: stop asking."""

GPM_METRICS: tuple[tuple[str, int], ...] = (
    ("gpm_sm_util_pct", 2),
    ("gpm_sm_occupancy_pct", 3),
    ("gpm_tensor_active_pct", 5),
    ("gpm_dram_bw_util_pct", 10),
    ("gpm_pcie_tx_mibps", 20),
    ("gpm_pcie_rx_mibps", 21),
    ("gpm_nvlink_rx_mibps", 60),
    ("gpm_nvlink_tx_mibps", 61),
)
GPM_MIN_INTERVAL_S = 0.5
PCIE_MIN_INTERVAL_S = 1.0
LOST_AFTER_FAILED_POLLS = 50
"""A device whose every reading failed this many polls in a row is no longer polled."""


def _code(err: BaseException) -> int | None:
    v = getattr(err, "value", None)
    return v if isinstance(v, int) else None


def _field_value(fv: Any) -> float | None:
    """The number in a ``c_nvmlFieldValue_t`` (by ``valueType``), None if its read failed."""
    if fv.nvmlReturn != 0:
        return None
    vt = fv.valueType
    u = fv.value
    if vt == 0:
        return float(u.dVal)
    if vt == 1:
        return float(u.uiVal)
    if vt == 2:
        return float(u.ulVal)
    if vt == 3:
        return float(u.ullVal)
    if vt == 4:
        return float(u.sllVal)
    if vt == 5:
        return float(u.siVal)
    if vt == 6:
        return float(u.usVal)
    return None


def _text(v: Any) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


@dataclass
class _Device:
    index: int
    handle: Any
    info: dict[str, Any]
    skip: set[str] = field(default_factory=set)
    """Readings this device does not support (never asked again)."""
    fields: list[Any] = field(default_factory=list)
    field_names: list[str] = field(default_factory=list)
    gpm_samples: list[Any] | None = None
    gpm_have_prev: bool = False
    failed_polls: int = 0
    lost: bool = False


class NvmlSampler:
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

    def _describe(self, i: int, h: Any) -> _Device:
        n = self._nvml
        info: dict[str, Any] = {"index": i}
        for key, fn in (
            ("name", lambda: _text(n.nvmlDeviceGetName(h))),
            ("uuid", lambda: _text(n.nvmlDeviceGetUUID(h))),
            ("pci_bus_id", lambda: _text(n.nvmlDeviceGetPciInfo(h).busId)),
            ("memory_total_bytes", lambda: int(n.nvmlDeviceGetMemoryInfo(h).total)),
            ("power_limit_mw", lambda: int(n.nvmlDeviceGetEnforcedPowerLimit(h))),
        ):
            try:
                info[key] = fn()
            except Exception:
                info[key] = None
        dev = _Device(index=i, handle=h, info=info)
        links = 0
        try:
            fv = n.nvmlDeviceGetFieldValues(h, [_FI_NVLINK_LINK_COUNT])[0]
            v = _field_value(fv)
            links = int(v) if v is not None else 0
        except Exception:
            links = 0
        info["nvlink_links"] = links
        dev.fields = [_FI_POWER_INSTANT, _FI_ENERGY, _FI_MEMORY_TEMP]
        dev.field_names = ["power_instant_mw", "energy_mj", "memory_temp_c"]
        for link in range(links):
            dev.fields += [(_FI_NVLINK_TX, link), (_FI_NVLINK_RX, link)]
            dev.field_names += ["nvlink_tx_kib", "nvlink_rx_kib"]
        info["gpm"] = False
        try:
            if n.nvmlGpmQueryDeviceSupport(h).isSupportedDevice:
                dev.gpm_samples = [n.nvmlGpmSampleAlloc(), n.nvmlGpmSampleAlloc()]
                info["gpm"] = True
        except Exception:
            dev.gpm_samples = None
        info["unsupported"] = []
        return dev

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

    def _read_energy(self, d: _Device) -> None:
        n = self._nvml
        if "energy_mj" in d.skip:
            return
        try:
            if "field:energy_mj" in d.skip:
                v: float | None = float(n.nvmlDeviceGetTotalEnergyConsumption(d.handle))
            else:
                v = _field_value(n.nvmlDeviceGetFieldValues(d.handle, [_FI_ENERGY])[0])
            t = self._clock()
            if v is not None:
                self._emit(t, d.index, "energy_mj", v)
        except Exception as e:
            self._failed(d, "energy_mj", e)

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

    def _poll_device(self, d: _Device, do_pcie: bool) -> bool:
        n = self._nvml
        h = d.handle
        ok = False
        # one batched field read
        if d.fields:
            try:
                vals = n.nvmlDeviceGetFieldValues(h, d.fields)
                t = self._clock()
                sums: dict[str, float] = {}
                keep_f, keep_n = [], []
                for f, name, fv in zip(d.fields, d.field_names, vals, strict=False):
                    if fv.nvmlReturn in _UNSUPPORTED_CODES:
                        d.skip.add(f"field:{name}")
                        if name not in d.info["unsupported"]:
                            d.info["unsupported"].append(name)
                        continue
                    keep_f.append(f)
                    keep_n.append(name)
                    v = _field_value(fv)
                    if v is None:
                        continue
                    if name.startswith("nvlink_"):
                        sums[name] = sums.get(name, 0.0) + v
                    else:
                        self._emit(t, d.index, name, v)
                for name, v in sums.items():
                    self._emit(t, d.index, name, v)
                d.fields, d.field_names = keep_f, keep_n
                ok = True
            except Exception as e:
                self._failed(d, "fields", e)
        singles: list[tuple[str, Callable[[], Any]]] = []
        if "field:power_instant_mw" in d.skip:
            singles.append(("power_usage_mw", lambda: n.nvmlDeviceGetPowerUsage(h)))
        if "field:energy_mj" in d.skip:
            singles.append(("energy_mj", lambda: n.nvmlDeviceGetTotalEnergyConsumption(h)))
        singles += [
            ("utilization", lambda: n.nvmlDeviceGetUtilizationRates(h)),
            ("mem_used_bytes", lambda: n.nvmlDeviceGetMemoryInfo(h).used),
            ("sm_clock_mhz", lambda: n.nvmlDeviceGetClockInfo(h, 1)),  # NVML_CLOCK_SM
            ("mem_clock_mhz", lambda: n.nvmlDeviceGetClockInfo(h, 2)),  # NVML_CLOCK_MEM
            ("clock_event_reasons", lambda: n.nvmlDeviceGetCurrentClocksEventReasons(h)),
            ("gpu_temp_c", lambda: n.nvmlDeviceGetTemperature(h, 0)),  # NVML_TEMPERATURE_GPU
        ]
        if do_pcie:
            singles += [
                ("pcie_tx_kbps", lambda: n.nvmlDeviceGetPcieThroughput(h, 0)),
                ("pcie_rx_kbps", lambda: n.nvmlDeviceGetPcieThroughput(h, 1)),
            ]
        for name, fn in singles:
            if name in d.skip:
                continue
            try:
                v = fn()
                t = self._clock()
                if name == "utilization":
                    self._emit(t, d.index, "gpu_util_pct", float(v.gpu))
                    self._emit(t, d.index, "mem_util_pct", float(v.memory))
                else:
                    self._emit(t, d.index, name, float(v))
                ok = True
            except Exception as e:
                self._failed(d, name, e)
        return ok

    def _poll_gpm(self, d: _Device) -> bool:
        n = self._nvml
        assert d.gpm_samples is not None
        try:
            n.nvmlGpmSampleGet(d.handle, d.gpm_samples[1])
            t = self._clock()
            if d.gpm_have_prev:
                mg = n.c_nvmlGpmMetricsGet_t()
                mg.version = n.NVML_GPM_METRICS_GET_VERSION
                mg.numMetrics = len(GPM_METRICS)
                mg.sample1 = d.gpm_samples[0]
                mg.sample2 = d.gpm_samples[1]
                for i, (_, mid) in enumerate(GPM_METRICS):
                    mg.metrics[i].metricId = mid
                n.nvmlGpmMetricsGet(mg)
                for i, (name, _) in enumerate(GPM_METRICS):
                    m = mg.metrics[i]
                    if m.nvmlReturn == 0:
                        self._emit(t, d.index, name, float(m.value))
            d.gpm_samples.reverse()  # the newest sample is the next interval's first
            d.gpm_have_prev = True
            return True
        except Exception as e:
            if _code(e) in _UNSUPPORTED_CODES:
                d.info["gpm"] = False
                d.gpm_samples = None
            self._failed(d, "gpm", e)
            return False

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

    def _failed(self, d: _Device, name: str, err: BaseException) -> None:
        if _code(err) in _UNSUPPORTED_CODES:
            d.skip.add(name)
            if name == "fields":
                d.fields, d.field_names = [], []
                d.skip.update({"field:power_instant_mw", "field:energy_mj"})
            if name not in d.info["unsupported"]:
                d.info["unsupported"].append(name)
            return
        self._count_error(err)

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


# --------------------------------------------------------------------------- reading back
def _gunzip_tolerant(data: bytes, path: Path) -> bytes:
    """Decompress gzip data; a stream cut short (crashed writer) yields what is complete."""
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(data)
    except zlib.error as e:
        raise InputError(f"not a valid gzip file: {e}", path=path) from None
    return out


def read_counters(path: str | Path) -> pd.DataFrame:
    """Read a counter file into the trace model's ``counters`` layout.

    ``name`` = field, ``ts_ns`` = ``t_unix_ns`` (Unix-epoch ns), ``value``, ``device`` = NVML
    index (-1 for ``step_begin`` rows).  A file whose writer died mid-way is read up to its
    last complete row.

    Raises:
        InputError: missing file, not gzip, or not a gpuscope counter file.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read counter file: {e.strerror or e}", path=p) from None
    text = _gunzip_tolerant(raw, p) if raw[:2] == b"\x1f\x8b" else raw
    if not text.startswith(CSV_HEADER.encode()):
        raise InputError(
            f"not a gpuscope NVML counter file (expected header {CSV_HEADER.strip()!r})", path=p
        )
    end = text.rfind(b"\n")
    body = text[: end + 1]
    try:
        df = pd.read_csv(
            io.BytesIO(body),
            dtype={"t_mono_ns": np.int64, "t_unix_ns": np.int64, "gpu": np.int64},
        )
    except (ValueError, pd.errors.ParserError) as e:
        raise InputError(f"malformed counter rows: {e}", path=p) from None
    return counter_table(
        {
            "name": df["field"].astype(str).to_numpy(),
            "ts_ns": df["t_unix_ns"].to_numpy(),
            "value": df["value"].to_numpy(dtype=np.float64),
            "device": df["gpu"].to_numpy(),
        }
    )


def energy_per_step(counters: pd.DataFrame) -> pd.DataFrame:
    """Energy of each complete step per device, from the energy counter's deltas.

    Step k runs from its ``step_begin`` row to step k+1's.  The energy at a boundary is the
    first ``energy_mj`` reading of the device at or after the boundary's time (the sampler reads
    the counter right after every boundary); ``energy_mj`` of step k is the difference of the
    two boundary readings, and ``avg_power_w = energy_mj / (end_ns - start_ns) × 1e6``.  A
    missing reading gives NaN.

    Returns:
        DataFrame ``step, device, start_ns, end_ns, energy_mj, avg_power_w`` sorted by device
        then step.
    """
    cols = ["step", "device", "start_ns", "end_ns", "energy_mj", "avg_power_w"]
    marks = counters[counters["name"] == "step_begin"].sort_values("ts_ns", kind="stable")
    energy = counters[counters["name"] == "energy_mj"]
    if len(marks) < 2 or energy.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in cols})
    steps = marks["value"].to_numpy(dtype=np.int64)
    bounds = marks["ts_ns"].to_numpy(dtype=np.int64)
    out = []
    for dev, e in energy.groupby("device", sort=True, observed=True):
        e = e.sort_values("ts_ns", kind="stable")
        ts = e["ts_ns"].to_numpy(dtype=np.int64)
        val = e["value"].to_numpy(dtype=np.float64)
        idx = np.searchsorted(ts, bounds, side="left")
        at = np.where(idx < len(ts), val[np.minimum(idx, len(ts) - 1)], np.nan)
        dur = bounds[1:] - bounds[:-1]
        emj = at[1:] - at[:-1]
        out.append(
            pd.DataFrame(
                {
                    "step": steps[:-1],
                    "device": np.full(len(dur), int(dev), dtype=np.int64),
                    "start_ns": bounds[:-1],
                    "end_ns": bounds[1:],
                    "energy_mj": emj,
                    "avg_power_w": emj / dur * 1e6,
                }
            )
        )
    return pd.concat(out, ignore_index=True)[cols]


def counter_files(run_dir: str | Path) -> list[Path]:
    """The counter files of a run directory (``counters/*.csv.gz``), sorted."""
    return sorted(Path(run_dir, "counters").glob("*.csv.gz"))


def read_run_counters(paths: Iterable[str | Path]) -> dict[str, pd.DataFrame]:
    """``{host: counters}`` for counter files named ``<host>.csv.gz``."""
    return {Path(p).name[: -len(".csv.gz")]: read_counters(p) for p in paths}
