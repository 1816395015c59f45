"""The recorded arguments of one op call, and the cost record of a model.

Kineto records, per positional argument of an op (schema order, keyword-only arguments
included): ``Input Dims`` (a tensor's shape, ``[]`` otherwise), ``Input type`` (the tensor's
dtype, or ``Scalar`` / ``ScalarList`` / ``""``), ``Input Strides`` and ``Concrete Inputs`` (the
value of a scalar argument as text: ``"[16, 16]"``, ``"False"``, ``"0.125"``; ``""`` for
tensors and ``None``).  :class:`OpArgs` holds them by position; models read an argument by its
index in the op's schema (the tables of :mod:`analyzers.op_models.gemm`, ``conv``,
``attention``).
"""

from __future__ import annotations

import math
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
    """One tensor argument: shape, dtype and, when recorded, strides."""

    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...] | None = None

    @property
    def numel(self) -> int:
        """Logical elements (the product of the shape)."""
        return math.prod(self.shape)

    @property
    def distinct_numel(self) -> int:
        """Elements in memory: a dimension of stride 0 (an ``expand``-ed broadcast) repeats
        the same elements, so it counts once; equals :attr:`numel` without strides."""
        st = self.strides
        if st is None or len(st) != len(self.shape):
            return self.numel
        return math.prod(d for d, s in zip(self.shape, st, strict=True) if s != 0)

    @property
    def nbytes(self) -> int:
        """Bytes of the distinct elements (:attr:`distinct_numel` × element size)."""
        return self.distinct_numel * (dtype_size(self.dtype) or 0)


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
    """True when every argument the formula needs is recorded; False (an *estimate*) when
    one is missing and a documented assumption replaces it (``note`` says which)."""
    note: str = ""
    """Why the cost is an estimate (empty for exact costs, or a definitional remark)."""

    @property
    def provenance(self) -> str:
        """``exact`` or ``estimate``."""
        return "exact" if self.exact else "estimate"


SCALAR_TYPES: dict[int, str] = {
    5: "half",
    6: "float",
    7: "double",
    15: "bfloat16",
    23: "float8_e5m2",
    24: "float8_e4m3fn",
    25: "float8_e5m2fnuz",
    26: "float8_e4m3fnuz",
}
"""c10 ``ScalarType`` codes (a ``dtype`` argument's Concrete Input) of float types."""


def _decode(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (str, bytes)):
        try:
            return msgspec.json.decode(v)
        except msgspec.DecodeError:
            return None
    return v


def _int_list(v: Any) -> list[int] | None:
    if not isinstance(v, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in v
    ):
        return None
    return list(v)


def parse_inputs(dims: Any, types: Any, strides: Any = None) -> list[Tensor | None] | None:
    """Kineto ``Input Dims``/``Input type`` (JSON strings or lists) → tensors (None for
    scalars, lists and absent optionals); None when unparseable or of different lengths.
    ``Input Strides`` (optional) are attached to the tensors when they fit."""
    d, t = _decode(dims), _decode(types)
    if not isinstance(d, list) or not isinstance(t, list) or len(d) != len(t):
        return None
    st = _decode(strides)
    if not isinstance(st, list) or len(st) != len(d):
        st = [None] * len(d)
    out: list[Tensor | None] = []
    for shape, ty, s in zip(d, t, st, strict=True):
        sh = _int_list(shape)
        if isinstance(ty, str) and dtype_size(ty) is not None and sh is not None:
            stride = _int_list(s)
            fits = tuple(stride) if stride is not None and len(stride) == len(sh) else None
            out.append(Tensor(tuple(sh), dtype_key(ty) or ty, fits))
        else:
            out.append(None)
    return out


@dataclass(frozen=True)
class OpArgs:
    """The recorded arguments of one call, by schema position."""

    tensors: tuple[Tensor | None, ...]
    concrete: tuple[str, ...] | None = None
    """``Concrete Inputs`` (one string per argument); None when the trace did not record
    them (then every scalar argument is unknown)."""

    def __len__(self) -> int:
        return len(self.tensors)

    def tensor(self, i: int | None) -> Tensor | None:
        return self.tensors[i] if i is not None and 0 <= i < len(self.tensors) else None

    def present(self) -> list[Tensor]:
        """The tensor arguments, in order."""
        return [t for t in self.tensors if t is not None]

    @property
    def recorded(self) -> bool:
        """Whether scalar arguments were recorded (``Concrete Inputs`` present)."""
        return self.concrete is not None

    def text(self, i: int | None) -> str | None:
        """The recorded value of argument *i*; None when not recorded, absent or ``None``."""
        c = self.concrete
        if c is None or i is None or not 0 <= i < len(c):
            return None
        v = c[i].strip()
        return None if v in ("", "None") else v

    def ints(self, i: int | None) -> tuple[int, ...] | None:
        """An int or int-list argument (``"2"`` → (2,), ``"[1, 1]"`` → (1, 1))."""
        v = self.text(i)
        if v is None:
            return None
        parsed = _decode(v)
        if isinstance(parsed, int) and not isinstance(parsed, bool):
            return (parsed,)
        lst = _int_list(parsed)
        return tuple(lst) if lst is not None else None

    def flag(self, i: int | None) -> bool | None:
        v = self.text(i)
        return {"true": True, "false": False, "1": True, "0": False}.get(v.lower()) if v else None

    def flags(self, i: int | None) -> tuple[bool, ...] | None:
        """A bool-list argument (``"[True, False, True]"``)."""
        v = self.text(i)
        if v is None or not (v.startswith("[") and v.endswith("]")):
            return None
        parts = [p.strip().lower() for p in v[1:-1].split(",") if p.strip()]
        if not all(p in ("true", "false") for p in parts):
            return None
        return tuple(p == "true" for p in parts)

    def number(self, i: int | None) -> float | None:
        v = self.text(i)
        if v is None:
            return None
        try:
            return float(v)
        except ValueError:
            return None


def parse_args(dims: Any, types: Any, concrete: Any = None, strides: Any = None) -> OpArgs | None:
    """:class:`OpArgs` from the four recorded lists (JSON text or lists); None when the
    shapes are unusable.  Concrete Inputs of another length than the shapes are ignored."""
    tensors = parse_inputs(dims, types, strides)
    if tensors is None:
        return None
    c = _decode(concrete)
    ok = isinstance(c, list) and len(c) == len(tensors) and all(isinstance(x, str) for x in c)
    return OpArgs(tuple(tensors), tuple(c) if ok else None)


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
