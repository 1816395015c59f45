"""The GPU peak table (peak FLOP/s and memory bandwidth for roofline ceilings): its loading from
TOML.  The data model is :mod:`collectors.peak_table` (re-exported here); look-ups (which entry a
traced device uses) are analysis: :mod:`analyzers.gpu_peaks`.

The built-in table ``collectors/data/gpu_peaks.toml`` restates ``reference/gpus.md`` with the
source of every row; figures marked [u] there are listed in the entry's ``unverified`` key and
stay marked in every output.  A user TOML file of the same shape overrides it: an entry with
the name of a built-in one replaces the keys it sets (and clears their unverified mark unless
it lists them again), a new name adds a GPU.

Precisions (``PRECISIONS``) and their keys: ``fp64`` (``fp64_tflops``), ``fp64_tensor``,
``fp32``, ``tf32_tensor``, ``fp16_tensor`` (FP16/BF16 tensor, FP32 accumulation),
``fp8_tensor``.  FLOP/s = TFLOP/s × 10¹²; bandwidth B/s = GB/s × 10⁹.  Documented but not
used as roofline ceilings: ``fp32_tensor_tflops`` and ``bf16_tensor_tflops`` (AMD matrix cores
list FP32 and BF16 matrix rates separately), ``int8_tensor_tops``, ``memory_gib``; ``gfx`` is
the LLVM target of an AMD GPU (matching devices whose name does not say which GPU they are).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collectors.errors import InputError, MissingDependencyError
from collectors.peak_table import NUMERIC_KEYS, PRECISIONS, TEXT_KEYS, GpuPeaks, PeakTable

__all__ = ["BUILTIN_PATH", "NUMERIC_KEYS", "PRECISIONS", "GpuPeaks", "PeakTable", "load_peaks"]

BUILTIN_PATH = Path(__file__).with_name("data") / "gpu_peaks.toml"

_KEYS = frozenset({"name", "match", "unverified", *NUMERIC_KEYS, *TEXT_KEYS})


def _toml_load(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise MissingDependencyError(
                "reading GPU peak files on Python 3.10 needs tomli: pip install tomli"
            ) from None
    from collectors.files import regular_file

    regular_file(path)  # a FIFO or device would block the open (docs/reliability.md)
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not valid TOML: {err}", path=path) from None


def _entries(doc: Mapping[str, Any], path: Path) -> list[dict[str, Any]]:
    gpus = doc.get("gpu")
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        raise InputError("expected [[gpu]] tables", path=path)
    for g in gpus:
        if not isinstance(g.get("name"), str):
            raise InputError("a [[gpu]] entry has no name", path=path)
        unknown = set(g) - _KEYS
        if unknown:
            raise InputError(
                f"GPU {g['name']!r}: unknown key(s) {', '.join(sorted(unknown))}", path=path
            )
        for k in NUMERIC_KEYS:
            v = g.get(k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0):
                raise InputError(f"GPU {g['name']!r}: {k} must be a positive number", path=path)
        bad = set(g.get("unverified", [])) - (_KEYS - {"name", "match", "unverified"})
        if bad:
            raise InputError(
                f"GPU {g['name']!r}: unverified names unknown key(s) {sorted(bad)}", path=path
            )
    return gpus


def _make(entry: Mapping[str, Any], origin: str) -> GpuPeaks:
    return GpuPeaks(
        name=entry["name"],
        match=tuple(entry.get("match", ())),
        values={k: float(entry[k]) for k in NUMERIC_KEYS if entry.get(k) is not None},
        text={k: str(entry[k]) for k in TEXT_KEYS if entry.get(k) is not None},
        unverified=frozenset(entry.get("unverified", ())),
        origin=origin,
    )


def load_peaks(user_file: str | Path | None = None) -> PeakTable:
    """The built-in table, overridden by *user_file* when given.

    Raises:
        InputError: the user file is missing, not TOML, or has unknown keys / bad values.
    """
    base = [dict(g) for g in _entries(_toml_load(BUILTIN_PATH), BUILTIN_PATH)]
    origins = ["built-in"] * len(base)
    if user_file is not None:
        up = Path(user_file)
        for g in _entries(_toml_load(up), up):
            idx = next(
                (i for i, b in enumerate(base) if b["name"].lower() == g["name"].lower()), None
            )
            if idx is None:
                base.append(dict(g))
                origins.append(str(up))
                continue
            merged = dict(base[idx])
            set_keys = set(g) - {"name", "unverified"}
            merged.update({k: v for k, v in g.items() if k != "unverified"})
            still = set(base[idx].get("unverified", ())) - set_keys
            merged["unverified"] = sorted(still | set(g.get("unverified", ())))
            base[idx] = merged
            origins[idx] = f"built-in, overridden by {up}"
    return PeakTable(tuple(_make(g, o) for g, o in zip(base, origins, strict=True)))
