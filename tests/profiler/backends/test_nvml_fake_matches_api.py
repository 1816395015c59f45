"""The fake pynvml follows nvidia-ml-py: same function signatures, real error classes and codes."""

from __future__ import annotations

import inspect

import pynvml
import pytest

from tests.fakes.fake_pynvml import API, FakeGpu, FakeNvml


@pytest.mark.parametrize("name", API)
def test_fake_function_has_the_real_signature(name: str) -> None:
    real = inspect.signature(getattr(pynvml, name))
    fake = inspect.signature(getattr(FakeNvml([]), name))
    assert list(real.parameters) == list(fake.parameters), name
    for p, q in zip(real.parameters.values(), fake.parameters.values(), strict=True):
        assert (p.kind, p.default) == (q.kind, q.default), name


def test_sampler_uses_only_functions_the_fake_implements() -> None:
    import re
    from pathlib import Path

    import profiler.backends.nvml as sampler
    import profiler.backends.nvml_device as readings

    src = "".join(Path(mod.__file__).read_text() for mod in (sampler, readings))
    used = set(re.findall(r"\bn\.(nvml\w+)\(", src)) | set(
        re.findall(r"self\._nvml\.(nvml\w+)\(", src)
    )
    assert used and used <= set(API), sorted(used - set(API))


def test_fake_raises_the_real_error_classes_with_real_codes() -> None:
    fake = FakeNvml([FakeGpu(unsupported_calls={"nvmlDeviceGetPowerUsage"})])
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()
    fake.nvmlInit()
    with pytest.raises(pynvml.NVMLError_NotSupported) as e:
        fake.nvmlDeviceGetPowerUsage(0)
    assert e.value.value == pynvml.NVML_ERROR_NOT_SUPPORTED == 3
    fake.fail_all_with = pynvml.NVML_ERROR_GPU_IS_LOST
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        fake.nvmlDeviceGetTemperature(0, pynvml.NVML_TEMPERATURE_GPU)
    fake.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_LibraryNotFound):
        FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND).nvmlInit()


def test_fake_field_values_are_real_structures() -> None:
    fake = FakeNvml([FakeGpu()], clock=lambda: 2_000_000_000)
    fake.nvmlInit()
    vals = fake.nvmlDeviceGetFieldValues(0, [pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION])
    assert isinstance(vals[0], pynvml.c_nvmlFieldValue_t)
    assert vals[0].valueType == pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
    assert vals[0].value.ullVal == 1_000_000 + 300_000 * 2
