"""Tensors of a recorded op call: element sizes by Kineto dtype name, shapes, the cost record,
and the peak-table precision of a dtype (definitions: :mod:`analyzers.op_models`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

DTYPE_BYTES: dict[str, int] = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "long": 8,
    "long int": 8,
    "int64_t": 8,
    "int": 4,
    "int32_t": 4,
    "short": 2,
    "short int": 2,
    "bool": 1,
    "unsigned char": 1,
    "signed char": 1,
    "complex<float>": 8,
    "complex<double>": 16,
    "complex<half>": 4,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "qint8": 1,
    "quint8": 1,
    "qint32": 4,
}
"""Element size by Kineto ``Input type`` (``c10::`` prefix and case ignored)."""

FLOAT_PRECISION = {
    "double": "fp64",
    "float64": "fp64",
    "float": "fp32",
    "float32": "fp32",
    "half": "fp16",
    "float16": "fp16",
    "bfloat16": "fp16",
}


def dtype_key(t: str | None) -> str | None:
    """Normalised dtype name (``c10::BFloat16`` → ``bfloat16``), None for non-tensors."""
    if not t:
        return None
    k = t.strip().lower().replace("c10::", "")
    return k if k in DTYPE_BYTES else (k if k.startswith("float8") else None)


def dtype_size(t: str | None) -> int | None:
    k = dtype_key(t)
    if k is None:
        return None
    return DTYPE_BYTES.get(k, 1 if k.startswith("float8") else None)


@dataclass(frozen=True)
class Tensor:
    """One tensor input: shape and dtype."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * (dtype_size(self.dtype) or 0)


@dataclass(frozen=True)
class OpCost:
    """FLOP and byte count of one op call."""

    flops: int
    bytes: int
    kind: str
    """``gemm`` | ``conv`` | ``attention`` | ``elementwise`` | ``reduction``."""
    precision: str
    """Peak-table precision: ``fp64``, ``fp32``, ``fp16_tensor``, ``fp8_tensor``..."""
    exact: bool
    """False when an input the formula needs is not recorded (see ``note``)."""
    note: str = ""


def parse_inputs(dims: Any, types: Any) -> list[Tensor | None] | None:
    """Kineto ``Input Dims``/``Input type`` (JSON strings or lists) → tensors (None for
    scalars, lists and absent optionals); None when unparseable or of different lengths."""
    try:
        d = msgspec.json.decode(dims) if isinstance(dims, (str, bytes)) else dims
        t = msgspec.json.decode(types) if isinstance(types, (str, bytes)) else types
    except msgspec.DecodeError:
        return None
    if not isinstance(d, list) or not isinstance(t, list) or len(d) != len(t):
        return None
    out: list[Tensor | None] = []
    for shape, ty in zip(d, t, strict=True):
        if (
            isinstance(ty, str)
            and dtype_size(ty) is not None
            and isinstance(shape, list)
            and all(isinstance(x, int) and not isinstance(x, bool) for x in shape)
        ):
            out.append(Tensor(tuple(shape), dtype_key(ty) or ty))
        else:
            out.append(None)
    return out


def arg(inputs: Sequence[Tensor | None], i: int) -> Tensor | None:
    return inputs[i] if i < len(inputs) else None


def matmul_precision(dtype: str) -> str:
    p = FLOAT_PRECISION.get(dtype)
    if p == "fp16":
        return "fp16_tensor"
    if dtype.startswith("float8"):
        return "fp8_tensor"
    return p or "fp32"


def vector_precision(dtype: str) -> str:
    return "fp64" if FLOAT_PRECISION.get(dtype) == "fp64" else "fp32"


def bias_numel(t: Tensor | None) -> int:
    return t.numel if t is not None and len(t.shape) > 0 else 0
