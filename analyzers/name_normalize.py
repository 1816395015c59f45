"""Kernel-name normalisation: the key under which ``gpuscope compare`` matches kernels.

Two runs of one program name the same kernel differently in ways that say nothing about the
work it does: the demangled signature's return type and parameter list may or may not be
present (Kineto vs. Nsight Systems short names), spacing inside template arguments differs
between demanglers (``> >`` vs ``>>``), integer template arguments carry literal suffixes
(``4096ul``), and code generators number their kernels in generation order (Triton/Inductor
``triton_poi_fused_add_0`` may be ``..._3`` in the next run).  :func:`normalize_kernel_name`
applies, in this order (docs/compare.md "Kernel names"):

1. collapse runs of whitespace to one space and strip the ends;
2. drop a leading ``void `` (the return type of every demangled CUDA kernel);
3. drop the trailing parameter list: a final ``( … )`` group (balanced) that directly follows an
   identifier character or ``>`` — so ``Memcpy HtoD (Pinned -> Device)`` keeps its ``(…)``;
4. remove whitespace before ``< > , ) * &`` and after ``< > , ( * &`` unless a ``(`` follows
   (template-argument spacing; a space before ``(`` stays, so the result is a fixed point);
5. drop integer-literal suffixes ``u l ul lu ll ull llu`` (any case) after a decimal number;
6. drop generation-order numbers: a trailing ``_<digits>`` of names starting with ``triton``,
   the ``_f<i>_c<j>_r<k>_g<l>`` ids of ``nvfuser_*`` kernels, and the number of
   ``CudaCodeGen::kernel<N>``.

Template arguments themselves are kept (``CUDAFunctor_add<float>`` and ``FillFunctor<float>``
are different kernels); so are tile configurations of library kernels (``…_128x64_…``).

    ``void k<4, at::Array<char*, 3> >(int, at::Array<char*, 3>)``  →  ``k<4,at::Array<char*,3>>``
    ``ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)``
    →  ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``
    ``Memcpy HtoD (Pinned -> Device)``  →  ``Memcpy HtoD (Pinned ->Device)``
    ``triton_poi_fused_add_cos_sin_0``  →  ``triton_poi_fused_add_cos_sin``
    ``OpaqueType<4u>``  →  ``OpaqueType<4>``
"""

from __future__ import annotations

import re
from functools import lru_cache

_WS = re.compile(r"\s+")
_WS_BEFORE = re.compile(r"\s+(?=[<>,)*&])")
_WS_AFTER = re.compile(r"(?<=[<>,(*&])\s+(?!\()")
_INT_SUFFIX = re.compile(r"\b(\d+)(?:ull|llu|ul|lu|ll|u|l)\b", re.IGNORECASE)
_TRITON = re.compile(r"^(triton\w*?)_\d+$")
_NVFUSER = re.compile(r"^(nvfuser_[A-Za-z]+)_f\d+_c\d+_r\d+_g\d+$")
_CODEGEN = re.compile(r"^(CudaCodeGen::kernel)\d+$")
_IDENT_END = re.compile(r"[A-Za-z0-9_>]")


def _strip_parameter_list(name: str) -> str:
    """*name* without a final balanced ``(…)`` group that follows an identifier or ``>``."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        c = name[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                if i > 0 and _IDENT_END.match(name[i - 1]):
                    return name[:i]
                return name
    return name  # unbalanced: leave it alone


@lru_cache(maxsize=65536)
def normalize_kernel_name(name: str | None) -> str:
    """The matching key of a kernel name (module docstring); ``""`` for a missing name."""
    if not isinstance(name, str):
        return ""
    s = _WS.sub(" ", name).strip()
    if s.startswith("void "):
        s = s[5:]
    s = _strip_parameter_list(s)
    s = _WS_AFTER.sub("", _WS_BEFORE.sub("", s))
    s = _INT_SUFFIX.sub(r"\1", s)
    for pattern in (_TRITON, _NVFUSER, _CODEGEN):
        m = pattern.match(s)
        if m:
            s = m.group(1)
            break
    return s
