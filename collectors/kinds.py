"""The vocabulary of the model's categorical columns that the readers need before pandas is
imported (:mod:`collectors.model` re-exports them; standard library only, so a reader's helper
process can start before the heavy imports: :mod:`collectors.kineto.parallel`)."""

from __future__ import annotations

import re

GPU_WORK_KINDS = ("kernel", "memcpy", "memset")
"""``gpu.kind`` values that are GPU work: what the idle, launch, op-cost, NVTX-projection and
compare analyses count (HTA's kernels, memcpys and memsets; no ``sync`` or ``other`` rows)."""
GPU_KINDS = (*GPU_WORK_KINDS, "sync", "other")
"""Every ``gpu.kind`` value."""

LAUNCH_CATS = (
    "cuda_runtime",
    "cuda_driver",
    "Runtime",
    "mtia_runtime",
    "privateuse1_runtime",
    "xpu_runtime",
)
"""Host categories of the device API calls, among them the calls that launch GPU work (linked
by ``correlation``: :mod:`collectors.linking`).  ``Runtime``: Kineto before 2023."""

_API_VERSION_SUFFIX = re.compile(r"_v\d+$")


def strip_api_version(name: str) -> str:
    """``cudaLaunchKernel_v7000`` → ``cudaLaunchKernel``: a device API call's name without the
    ``_v<N>`` version suffix nsys appends (Kineto's names have none)."""
    return _API_VERSION_SUFFIX.sub("", name)
