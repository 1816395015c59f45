"""A fake ``pynvml`` at the NVML boundary, for CPU-only tests of the NVML sampler.

It follows nvidia-ml-py's API: every function has the real function's signature (checked by
``tests/profiler/backends/test_nvml_fake_matches_api.py``), errors are the real
``pynvml.NVMLError`` subclasses with the real codes, and results are the real ctypes structures
(``c_nvmlFieldValue_t``, ``c_nvmlUtilization_t``, ``c_nvmlMemory_t``,
``c_nvmlGpmMetricsGet_t`` ...).  Devices are simulated with readings that are exact functions of
a fake clock, so tests can compute the expected rows by hand.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import pynvml as real

# constants, structures and errors are the real ones
NVMLError = real.NVMLError
NVML_GPM_METRICS_GET_VERSION = real.NVML_GPM_METRICS_GET_VERSION
c_nvmlGpmMetricsGet_t = real.c_nvmlGpmMetricsGet_t
c_nvmlFieldValue_t = real.c_nvmlFieldValue_t

API = (
    "nvmlInit",
    "nvmlShutdown",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex",
    "nvmlSystemGetDriverVersion",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPcieThroughput",
    "nvmlGpmQueryDeviceSupport",
    "nvmlGpmSampleAlloc",
    "nvmlGpmSampleGet",
    "nvmlGpmMetricsGet",
    "nvmlGpmSampleFree",
)
"""The functions the fake implements (the sampler uses nothing else)."""


@dataclass
class FakeGpu:
    """One simulated GPU; readings are exact functions of the fake clock (ns)."""

    name: str = "NVIDIA H200"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    bus_id: str = "00000000:19:00.0"
    power_mw: int = 300_000
    energy0_mj: int = 1_000_000
    memory_total: int = 150_000_000_000
    memory_used: int = 40_000_000_000
    gpu_util: int = 87
    mem_util: int = 41
    sm_clock: int = 1980
    mem_clock: int = 3201
    reasons: int = 0x4
    temp_c: int = 61
    mem_temp_c: int = 55
    pcie_tx_kbps: int = 1200
    pcie_rx_kbps: int = 3400
    nvlink_links: int = 2
    nvlink_tx_kib_per_link: int = 500
    nvlink_rx_kib_per_link: int = 700
    gpm: bool = False
    gpm_values: dict[int, float] = field(
        default_factory=lambda: {2: 75.0, 3: 33.5, 5: 62.25, 10: 48.0, 20: 10.0, 21: 20.0}
    )
    unsupported_fields: set[int] = field(default_factory=set)
    unsupported_calls: set[str] = field(default_factory=set)

    def energy_mj(self, t_ns: int) -> int:
        """Energy counter at *t_ns*: ``energy0 + power × t`` (mW × ns / 1e9 = mJ), floored."""
        return self.energy0_mj + (self.power_mw * t_ns) // 1_000_000_000


class FakeNvml:
    """Stands in for the ``pynvml`` module: pass it as ``NvmlSampler(nvml=FakeNvml(...))``.

    Args:
        gpus: the simulated devices.
        clock: fake time in ns (energy is computed from it).
        init_error: an NVML error code raised by ``nvmlInit`` (e.g. LIBRARY_NOT_FOUND = 12).
    """

    NVMLError = real.NVMLError
    NVML_GPM_METRICS_GET_VERSION = real.NVML_GPM_METRICS_GET_VERSION
    c_nvmlGpmMetricsGet_t = real.c_nvmlGpmMetricsGet_t

    def __init__(
        self, gpus: list[FakeGpu], clock: Any = None, init_error: int | None = None
    ) -> None:
        self.gpus = gpus
        self.clock = clock or (lambda: 0)
        self.init_error = init_error
        self.init_count = 0
        self.shutdown_count = 0
        self.calls: dict[str, int] = {}
        self.fail_all_with: int | None = None
        """When set, every device call raises NVMLError(code) (e.g. GPU_IS_LOST = 15)."""
        self.raise_python_error = False
        """When set, device calls raise a non-NVML exception (a bug in the binding, say)."""
        self._gpm_alloc = 0
        self._gpm_freed = 0

    # ------------------------------------------------------------------ helpers
    def _enter(self, fn: str, handle: Any = None) -> FakeGpu | None:
        self.calls[fn] = self.calls.get(fn, 0) + 1
        if self.init_count <= self.shutdown_count:
            raise real.NVMLError(real.NVML_ERROR_UNINITIALIZED)
        if handle is None:
            return None
        if self.raise_python_error:
            raise RuntimeError("binding exploded")
        if self.fail_all_with is not None:
            raise real.NVMLError(self.fail_all_with)
        gpu = self.gpus[handle]
        if fn in gpu.unsupported_calls:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        return gpu

    @property
    def gpm_balance(self) -> int:
        return self._gpm_alloc - self._gpm_freed

    # ------------------------------------------------------------------ the API
    def nvmlInit(self) -> None:
        self.calls["nvmlInit"] = self.calls.get("nvmlInit", 0) + 1
        if self.init_error is not None:
            raise real.NVMLError(self.init_error)
        self.init_count += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.shutdown_count += 1

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.gpus):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return index

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return "570.86.15"

    def nvmlDeviceGetName(self, handle: int) -> str:
        return self._enter("nvmlDeviceGetName", handle).name  # type: ignore[union-attr]

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        return self._enter("nvmlDeviceGetUUID", handle).uuid  # type: ignore[union-attr]

    def nvmlDeviceGetPciInfo(self, handle: int) -> Any:
        g = self._enter("nvmlDeviceGetPciInfo", handle)
        p = real.nvmlPciInfo_t()
        p.busId = g.bus_id.encode()  # type: ignore[union-attr]
        return p

    def nvmlDeviceGetMemoryInfo(self, handle: int, version: Any = None) -> Any:
        g = self._enter("nvmlDeviceGetMemoryInfo", handle)
        assert g is not None
        m = real.c_nvmlMemory_t() if not version else real.c_nvmlMemory_v2_t()
        m.total, m.used, m.free = g.memory_total, g.memory_used, g.memory_total - g.memory_used
        return m

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: int) -> int:
        self._enter("nvmlDeviceGetEnforcedPowerLimit", handle)
        return 700_000

    def nvmlDeviceGetFieldValues(self, handle: int, fieldIds: list[Any]) -> Any:
        g = self._enter("nvmlDeviceGetFieldValues", handle)
        assert g is not None
        t = self.clock()
        values = (real.c_nvmlFieldValue_t * len(fieldIds))()
        for i, fid in enumerate(fieldIds):
            f, scope = fid if isinstance(fid, tuple) else (fid, 0)
            v = values[i]
            v.fieldId, v.scopeId, v.timestamp = f, scope, t // 1000
            if f in g.unsupported_fields:
                v.nvmlReturn = real.NVML_ERROR_NOT_SUPPORTED
                continue
            v.nvmlReturn = real.NVML_SUCCESS
            if f == real.NVML_FI_DEV_POWER_INSTANT:
                v.valueType, v.value.uiVal = real.NVML_VALUE_TYPE_UNSIGNED_INT, g.power_mw
            elif f == real.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
                v.valueType = real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                v.value.ullVal = g.energy_mj(t)
            elif f == real.NVML_FI_DEV_MEMORY_TEMP:
                v.valueType, v.value.uiVal = real.NVML_VALUE_TYPE_UNSIGNED_INT, g.mem_temp_c
            elif f == real.NVML_FI_DEV_NVLINK_LINK_COUNT:
                v.valueType, v.value.uiVal = real.NVML_VALUE_TYPE_UNSIGNED_INT, g.nvlink_links
            elif f == real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX and scope < g.nvlink_links:
                v.valueType = real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                v.value.ullVal = g.nvlink_tx_kib_per_link
            elif f == real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX and scope < g.nvlink_links:
                v.valueType = real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                v.value.ullVal = g.nvlink_rx_kib_per_link
            else:
                v.nvmlReturn = real.NVML_ERROR_INVALID_ARGUMENT
        return values

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        return self._enter("nvmlDeviceGetPowerUsage", handle).power_mw  # type: ignore[union-attr]

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        g = self._enter("nvmlDeviceGetTotalEnergyConsumption", handle)
        return g.energy_mj(self.clock())  # type: ignore[union-attr]

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Any:
        g = self._enter("nvmlDeviceGetUtilizationRates", handle)
        u = real.c_nvmlUtilization_t()
        u.gpu, u.memory = g.gpu_util, g.mem_util  # type: ignore[union-attr]
        return u

    def nvmlDeviceGetClockInfo(self, handle: int, type: int) -> int:
        g = self._enter("nvmlDeviceGetClockInfo", handle)
        assert g is not None
        if type == real.NVML_CLOCK_SM:
            return g.sm_clock
        if type == real.NVML_CLOCK_MEM:
            return g.mem_clock
        raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: int) -> int:
        g = self._enter("nvmlDeviceGetCurrentClocksEventReasons", handle)
        return g.reasons  # type: ignore[union-attr]

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        g = self._enter("nvmlDeviceGetTemperature", handle)
        if sensor != real.NVML_TEMPERATURE_GPU:
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return g.temp_c  # type: ignore[union-attr]

    def nvmlDeviceGetPcieThroughput(self, device: int, counter: int) -> int:
        g = self._enter("nvmlDeviceGetPcieThroughput", device)
        assert g is not None
        return g.pcie_tx_kbps if counter == real.NVML_PCIE_UTIL_TX_BYTES else g.pcie_rx_kbps

    def nvmlGpmQueryDeviceSupport(self, device: int) -> Any:
        g = self._enter("nvmlGpmQueryDeviceSupport", device)
        s = real.c_nvmlGpmSupport_t()
        s.version = real.NVML_GPM_SUPPORT_VERSION
        s.isSupportedDevice = 1 if g.gpm else 0  # type: ignore[union-attr]
        return s

    def nvmlGpmSampleAlloc(self) -> Any:
        self._enter("nvmlGpmSampleAlloc")
        self._gpm_alloc += 1
        return real.c_nvmlGpmSample_t(real.struct_c_nvmlGpmSample_t())

    def nvmlGpmSampleGet(self, device: int, gpmSample: Any) -> Any:
        self._enter("nvmlGpmSampleGet", device)
        return gpmSample

    def nvmlGpmMetricsGet(self, metricsGet: Any) -> Any:
        self._enter("nvmlGpmMetricsGet")
        if metricsGet.version != real.NVML_GPM_METRICS_GET_VERSION:
            raise real.NVMLError(real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        g = self.gpus[0]
        for i in range(metricsGet.numMetrics):
            m = metricsGet.metrics[i]
            if m.metricId in g.gpm_values:
                m.value, m.nvmlReturn = g.gpm_values[m.metricId], real.NVML_SUCCESS
            else:
                m.nvmlReturn = real.NVML_ERROR_NOT_SUPPORTED
        return metricsGet

    def nvmlGpmSampleFree(self, gpmSample: Any) -> None:
        self._enter("nvmlGpmSampleFree")
        assert isinstance(gpmSample, ctypes._Pointer)
        self._gpm_freed += 1
