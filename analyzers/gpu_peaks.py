"""GPU peak FLOP/s and memory bandwidth for roofline ceilings, from a documented table.

The built-in table ``analyzers/data/gpu_peaks.toml`` restates ``reference/gpus.md`` with the
source of every row; figures marked [u] there are listed in the entry's ``unverified`` key and
stay marked in every output.  A user TOML file of the same shape overrides it: an entry with
the name of a built-in one replaces the keys it sets (and clears their unverified mark unless
it lists them again), a new name adds a GPU.

Precisions (``PRECISIONS``) and their keys: ``fp64`` (``fp64_tflops``), ``fp64_tensor``,
``fp32``, ``tf32_tensor``, ``fp16_tensor`` (FP16/BF16 tensor, FP32 accumulation),
``fp8_tensor``.  FLOP/s = TFLOP/s × 10¹²; bandwidth B/s = GB/s × 10⁹.  Documented but not
used as roofline ceilings: ``fp32_tensor_tflops`` and ``bf16_tensor_tflops`` (AMD matrix cores
list FP32 and BF16 matrix rates separately), ``int8_tensor_tops``, ``memory_gib``.

Matching a traced device (:func:`peaks_for_device`): its name against each entry's ``match``
substrings (longest wins; on a tie a user-file entry wins over a built-in one; when several
entries match and the device reports its SM/CU count, the entries with that count are
preferred).  An AMD device whose name does not say which GPU it is (ROCm reports
``AMD Radeon Graphics`` or an empty name on some systems) is matched by its LLVM target
(``gfx`` key) and compute-unit count, then its memory size; no match gives the reason.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzers.arch import amd_gfx, is_amd
from collectors.errors import InputError, MissingDependencyError, UsageError
from collectors.model import DeviceInfo

PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32_tensor", "fp16_tensor", "fp8_tensor")

BUILTIN_PATH = Path(__file__).with_name("data") / "gpu_peaks.toml"

_NUMERIC = (
    "sm_count",
    "boost_clock_mhz",
    *(f"{p}_tflops" for p in PRECISIONS),
    "fp32_tensor_tflops",
    "bf16_tensor_tflops",
    "int8_tensor_tops",
    "memory_gib",
    "mem_bw_gbs",
    "nvlink_gbs",
)
_TEXT = ("memory", "l2", "notes", "source", "gfx")
_KEYS = frozenset({"name", "match", "unverified", *_NUMERIC, *_TEXT})


@dataclass(frozen=True)
class GpuPeaks:
    """Peak figures of one GPU model (None = not published / not applicable)."""

    name: str
    match: tuple[str, ...]
    values: Mapping[str, float]
    """Numeric keys of the TOML entry (``fp32_tflops``, ``mem_bw_gbs``, ...)."""
    text: Mapping[str, str]
    unverified: frozenset[str] = field(default_factory=frozenset)
    origin: str = "built-in"
    """``built-in`` | the user file that set or changed the entry."""

    def peak_flops(self, precision: str) -> float | None:
        """Peak FLOP/s for *precision* (one of :data:`PRECISIONS`), or None."""
        v = self.values.get(f"{precision}_tflops")
        return None if v is None else v * 1e12

    @property
    def mem_bw_bytes_per_s(self) -> float | None:
        v = self.values.get("mem_bw_gbs")
        return None if v is None else v * 1e9

    def is_unverified(self, key: str) -> bool:
        return key in self.unverified

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every key, plus ``unverified`` and ``origin``."""
        out: dict[str, Any] = {"name": self.name, "match": list(self.match)}
        out.update(self.values)
        out.update(self.text)
        out["unverified"] = sorted(self.unverified)
        out["origin"] = self.origin
        return out


@dataclass(frozen=True)
class PeakTable:
    """All known GPUs; look-ups by table name or by a traced device name."""

    gpus: tuple[GpuPeaks, ...]

    def names(self) -> list[str]:
        return [g.name for g in self.gpus]

    def find(self, device_name: str | None, cu_count: int | None = None) -> GpuPeaks | None:
        """The entry whose name or longest ``match`` substring occurs in *device_name* (a
        user-file entry wins a tie; *cu_count* picks among several matching entries)."""
        if not device_name:
            return None
        low = device_name.lower()
        found: list[tuple[int, bool, GpuPeaks]] = []
        for g in self.gpus:
            if g.name.lower() == low:
                return g
            lengths = [len(m) for m in g.match if m.lower() in low]
            if lengths:
                found.append((max(lengths), g.origin != "built-in", g))
        if cu_count is not None and len(found) > 1:
            same = [f for f in found if f[2].values.get("sm_count") == cu_count]
            found = same or found
        if not found:
            return None
        best = found[0]
        for f in found[1:]:
            if (f[0], f[1]) > (best[0], best[1]):
                best = f
        return best[2]

    def by_architecture(
        self, gfx: str, cu_count: int | None, memory_bytes: int | None = None
    ) -> list[GpuPeaks]:
        """Entries of LLVM target *gfx* with *cu_count* compute units, narrowed by memory
        size (within 2 %) when that leaves at least one."""
        hits = [
            g
            for g in self.gpus
            if g.text.get("gfx") == gfx
            and (cu_count is None or g.values.get("sm_count") == cu_count)
        ]
        if memory_bytes and len(hits) > 1:
            gib = memory_bytes / 2**30
            near = [g for g in hits if abs(g.values.get("memory_gib", 0) - gib) <= 0.02 * gib]
            hits = near or hits
        return hits

    def get(self, name: str) -> GpuPeaks:
        """Entry for a user-given GPU name (table name or device name).

        Raises:
            UsageError: no entry matches.
        """
        g = self.find(name)
        if g is None:
            raise UsageError(
                f"unknown GPU {name!r}: known are {'; '.join(self.names())} "
                "(add it with --peaks FILE.toml)"
            )
        return g


@dataclass(frozen=True)
class PeakMatch:
    """The peak-table entry of a traced device, how it was found, or why none was."""

    peaks: GpuPeaks | None
    how: str | None = None
    """``device name`` or ``architecture gfx942, 304 CUs``; None without a match."""
    reason: str | None = None
    """Why no entry applies (unknown device name ...); None with a match."""


def _same_peaks(a: GpuPeaks, b: GpuPeaks) -> bool:
    """Equal ceilings (FLOP/s keys and bandwidth within 1 %: datasheet rounding)."""
    keys = [k for k in _NUMERIC if k.endswith(("_tflops", "_tops")) or k == "mem_bw_gbs"]
    for k in keys:
        x, y = a.values.get(k), b.values.get(k)
        if (x is None) != (y is None) or (
            x is not None and y is not None and abs(x - y) > 0.01 * y
        ):
            return False
    return True


def peaks_for_device(table: PeakTable, device: DeviceInfo | None) -> PeakMatch:
    """The entry of *device* (module docstring), or the reason there is none."""
    if device is None:
        return PeakMatch(None, reason="the trace records no device properties")
    amd = is_amd(device)
    g = table.find(device.name, device.sm_count if amd else None)
    cus = g.values.get("sm_count") if g is not None else None
    if g is not None and amd and device.sm_count and cus and cus != device.sm_count:
        return PeakMatch(
            None,
            reason=f"device {device.name!r} reports {device.sm_count} CUs, the {g.name} entry "
            f"is for {cus:g} (a compute partition?): its peaks do not apply",
        )
    if g is not None:
        return PeakMatch(g, how="device name")
    gfx = amd_gfx(device) if amd else None
    if gfx is not None:
        hits = table.by_architecture(gfx, device.sm_count, device.total_memory_bytes)
        if hits and all(_same_peaks(h, hits[0]) for h in hits):
            names = " or ".join(h.name for h in hits)
            return PeakMatch(hits[0], how=f"architecture {gfx}, {device.sm_count} CUs: {names}")
        if hits:
            names = ", ".join(h.name for h in hits)
            return PeakMatch(
                None,
                reason=f"device {device.name or '(no name)'!r} ({gfx}, {device.sm_count} CUs) "
                f"could be any of {names}: add a peak file entry matching its name",
            )
    what = f"device name {device.name!r}" if device.name else "an empty device name"
    arch = f" ({gfx}, {device.sm_count} CUs)" if gfx else ""
    return PeakMatch(
        None,
        reason=f"unknown {what}{arch}: not in the GPU peak table (add it with a peak file)",
    )


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
        for k in _NUMERIC:
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
        values={k: float(entry[k]) for k in _NUMERIC if entry.get(k) is not None},
        text={k: str(entry[k]) for k in _TEXT if entry.get(k) is not None},
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
