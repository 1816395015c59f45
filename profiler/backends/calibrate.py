"""Measure the local GPU's achievable memory bandwidth and matmul throughput with torch.

* **bandwidth**: device-to-device copy of a ``size_bytes`` buffer; each copy reads and writes
  it, so bandwidth = ``2 × size_bytes / time`` (the convention of STREAM "copy" and
  nvbandwidth's device-local copy);
* **matmul**: ``torch.matmul`` of two ``n × n`` matrices per dtype (fp32 with TF32 disabled,
  fp16/bf16 on tensor cores), FLOP/s = ``2·n³ / time``.

Each figure is the **median** of ``repeats`` timed runs after ``warmup`` untimed ones, timed with
CUDA events.  The result can be written as a peak-table override (``gpuscope calibrate -o
peaks.toml``) so that rooflines use what the machine reaches instead of datasheet figures.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from collectors.errors import MissingDependencyError

MATMUL_DTYPES = {"fp32": "float32", "fp16_tensor": "float16", "bf16_tensor": "bfloat16"}
"""Peak-table precision → torch dtype measured."""


@dataclass(frozen=True)
class Calibration:
    """Measured figures of one device."""

    device_name: str
    bandwidth_bytes_per_s: float
    matmul_flops_per_s: dict[str, float]
    """Precision (``fp32``, ``fp16_tensor``, ``bf16_tensor``) → FLOP/s."""
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device_name,
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "matmul_flops_per_s": dict(self.matmul_flops_per_s),
            "settings": dict(self.settings),
        }

    def to_toml(self) -> str:
        """A ``[[gpu]]`` entry for ``--peaks`` (fp16 tensor figure = the fp16 measurement)."""
        lines = [
            "# measured by `gpuscope calibrate` (median of timed runs; see docs/efficiency.md)",
            "[[gpu]]",
            f"name = {_q(self.device_name)}",
            f"match = [{_q(self.device_name)}]",
            f"mem_bw_gbs = {self.bandwidth_bytes_per_s / 1e9:.3f}",
        ]
        if "fp32" in self.matmul_flops_per_s:
            lines.append(f"fp32_tflops = {self.matmul_flops_per_s['fp32'] / 1e12:.3f}")
        if "fp16_tensor" in self.matmul_flops_per_s:
            lines.append(
                f"fp16_tensor_tflops = {self.matmul_flops_per_s['fp16_tensor'] / 1e12:.3f}"
            )
        lines.append(f"source = {_q('gpuscope calibrate')}")
        return "\n".join(lines) + "\n"


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingDependencyError(
            "calibrate needs torch (install the build that matches your GPU)"
        ) from None
    return torch


def require_gpu() -> Any:
    """torch, after checking that a CUDA GPU is visible.

    Raises:
        MissingDependencyError: torch is absent, or no CUDA GPU is visible to it.
    """
    torch = _torch()
    if not torch.cuda.is_available():
        raise MissingDependencyError(
            "no CUDA GPU is visible to torch (torch.cuda.is_available() is False): "
            "calibrate measures the local GPU and there is none here; "
            "use the datasheet table (gpuscope roofline --list-gpus) instead"
        )
    return torch


def _timed_ms(torch: Any, device: Any, fn: Callable[[], object]) -> float:
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))
    t0 = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t0) / 1e6


def _median_ms(
    torch: Any, device: Any, fn: Callable[[], object], warmup: int, repeats: int
) -> float:
    for _ in range(warmup):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return statistics.median(_timed_ms(torch, device, fn) for _ in range(repeats))


def measure_bandwidth(
    device: Any, size_bytes: int = 1 << 30, warmup: int = 3, repeats: int = 20
) -> float:
    """Copy bandwidth in B/s: ``2 × size_bytes / median copy time``."""
    torch = _torch()
    n = size_bytes // 4
    src = torch.empty(n, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    ms = _median_ms(torch, device, lambda: dst.copy_(src), warmup, repeats)
    return 2.0 * n * 4 / (ms * 1e-3)


def measure_matmul(
    device: Any, dtype: str, n: int = 8192, warmup: int = 3, repeats: int = 10
) -> float:
    """Matmul throughput in FLOP/s: ``2·n³ / median time`` (fp32 with TF32 off)."""
    torch = _torch()
    dt = getattr(torch, dtype)
    a = torch.randn(n, n, device=device).to(dt)
    b = torch.randn(n, n, device=device).to(dt)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        ms = _median_ms(torch, device, lambda: torch.matmul(a, b), warmup, repeats)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    return 2.0 * n**3 / (ms * 1e-3)


def calibrate(
    size_bytes: int = 1 << 30, n: int = 8192, precisions: tuple[str, ...] = tuple(MATMUL_DTYPES)
) -> Calibration:
    """Measure the first visible CUDA GPU.

    Raises:
        MissingDependencyError: torch is absent or no CUDA GPU is visible.
    """
    torch = require_gpu()
    device = torch.device("cuda", torch.cuda.current_device())
    bw = measure_bandwidth(device, size_bytes)
    flops = {p: measure_matmul(device, MATMUL_DTYPES[p], n) for p in precisions}
    return Calibration(
        torch.cuda.get_device_name(device),
        bw,
        flops,
        {
            "copy_bytes": size_bytes,
            "matmul_n": n,
            "statistic": "median",
            "torch": torch.__version__,
        },
    )
