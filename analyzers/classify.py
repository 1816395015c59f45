"""Kernel types by name, with HTA's rule sets (docs/metrics.md "Kernel types").

A GPU event's type is decided from its name with Python ``re.match`` (anchored at the start),
in this order: COMMUNICATION, else MEMORY, else COMPUTATION (the name does *not* match the
"not compute" pattern), else OTHER.  Two rule sets exist:

    =====  ==========================================================================
    0.6    HTA 0.6.0 / 0.6.1 / main (default): ``hip*`` and ``hccl*`` are COMMUNICATION,
           ``Stream Wait Event`` is OTHER
    0.5    HTA 0.5.0: only ``nccl…Kernel`` is COMMUNICATION, ``Stream Wait Event`` is
           COMPUTATION
    =====  ==========================================================================

gpuscope adds one rule on top of HTA's: a row whose source marks it as a memory copy or memory
set (``kind`` ``memcpy`` / ``memset``) is MEMORY whatever its name.  Kineto names those rows
``Memcpy …`` / ``Memset …``, so on Kineto input this never changes HTA's answer; it keeps
Nsight Systems rows (``[CUDA memcpy Host-to-Device]``) out of COMPUTATION.

    ==================================================  ===============
    name                                                type (0.6)
    ==================================================  ===============
    ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``         COMMUNICATION
    ``Memcpy HtoD (Pinned -> Device)``                  MEMORY
    ``void at::native::vectorized_elementwise_kernel``  COMPUTATION
    ``Stream Wait Event``                               OTHER
    ==================================================  ===============
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

COMMUNICATION = "COMMUNICATION"
MEMORY = "MEMORY"
COMPUTATION = "COMPUTATION"
OTHER = "OTHER"
KERNEL_TYPES = (COMMUNICATION, MEMORY, COMPUTATION, OTHER)
"""Every type :func:`classify_name` can return, in decision order."""

MEMORY_KINDS = ("memcpy", "memset")
"""``gpu.kind`` values that are MEMORY whatever the name (gpuscope's rule)."""


@dataclass(frozen=True)
class RuleSet:
    """One HTA version's patterns (applied with ``re.match``)."""

    communication: re.Pattern[str]
    memory: re.Pattern[str]
    not_compute: re.Pattern[str]
    step: re.Pattern[str]
    """ProfilerStep markers (used by the window filter)."""


RULES: dict[str, RuleSet] = {
    "0.6": RuleSet(
        communication=re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)"),
        memory=re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)"),
        not_compute=re.compile(
            r"(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)"
            r"|(cuda.*LaunchKernel)|(^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)"
            r"|(^cpum_exe_subgraph)|(^hccl)|(^collective_subgraph_execution)"
        ),
        step=re.compile(r"^ProfilerStep#(\d+)"),
    ),
    "0.5": RuleSet(
        communication=re.compile(r"^nccl.*Kernel"),
        memory=re.compile(r"(^Memcpy)|(^Memset)|(^dma)"),
        not_compute=re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)"),
        # HTA 0.5 takes any name *containing* ProfilerStep as a step marker
        step=re.compile(r".*ProfilerStep"),
    ),
}
"""Rule sets by HTA version; see docs/metrics.md for their source."""


def rules(hta_version: str) -> RuleSet:
    """The rule set of *hta_version* (``"0.6"`` or ``"0.5"``).

    Raises:
        UsageError: any other version.
    """
    try:
        return RULES[hta_version]
    except KeyError:
        from collectors.errors import UsageError

        raise UsageError(
            f"unknown HTA rule set {hta_version!r}; choose one of {', '.join(RULES)}"
        ) from None


def classify_name(name: str | None, hta_version: str = "0.6") -> str:
    """The kernel type of one name under HTA's rules (a missing name counts as ``""``)."""
    r = rules(hta_version)
    s = name if isinstance(name, str) else ""
    if r.communication.match(s):
        return COMMUNICATION
    if r.memory.match(s):
        return MEMORY
    if not r.not_compute.match(s):
        return COMPUTATION
    return OTHER


def classify(
    names: pd.Series, kinds: pd.Series | None = None, hta_version: str = "0.6"
) -> np.ndarray:
    """Kernel type of every row, as an object array of :data:`KERNEL_TYPES` strings.

    *names* may be ``category`` dtype (each distinct name is matched once) or plain strings.
    When *kinds* (the ``gpu.kind`` column) is given, rows of kind ``memcpy``/``memset`` are
    MEMORY (gpuscope's rule, see the module docstring).
    """
    import pandas as pd

    cat = names if isinstance(names.dtype, pd.CategoricalDtype) else names.astype("category")
    categories = cat.cat.categories
    per_name = np.array(
        [classify_name(str(c), hta_version) for c in categories]
        + [classify_name(None, hta_version)],
        dtype=object,
    )
    codes = cat.cat.codes.to_numpy()  # -1 (missing name) indexes the last entry
    out = per_name[codes]
    if kinds is not None and len(out):
        out[np.asarray(kinds.isin(MEMORY_KINDS))] = MEMORY
    return out


def is_step_name(name: str, hta_version: str = "0.6") -> bool:
    """True when *name* is a ProfilerStep marker under that HTA version's rule."""
    return rules(hta_version).step.match(name) is not None
