"""The per-device readings of the NVML sampler (:mod:`profiler.backends.nvml`): which NVML
fields and calls each reading uses, and how a failing one is given up.

:class:`DeviceReadings` is the sampler's part that talks to NVML about one device; the fields
it writes are listed in :mod:`profiler.backends.nvml`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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


class DeviceReadings:
    """Describing a device and reading it: mixed into :class:`profiler.backends.nvml.NvmlSampler`,
    which provides the NVML module, the clock, and where readings and errors go."""

    _nvml: Any
    _clock: Callable[[], int]

    def _emit(self, t: int, gpu: int, name: str, value: float) -> None:
        raise NotImplementedError

    def _count_error(self, err: BaseException) -> None:
        raise NotImplementedError

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
