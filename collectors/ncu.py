"""Nsight Compute CSV exports (``ncu --csv``) → one typed record per profiled kernel launch.

Both export layouts of ``reference/ncu.md`` §1 are read:

* **long** (details page, the default): one row per (launch ``ID``, metric), columns
  ``ID, Kernel Name, …, Metric Name, Metric Unit, Metric Value``;
* **wide** (``--page raw``): one row per launch, one column per metric, the line after the
  header holds the units.

Quirks handled: anything before the header line (application output, ``==PROF==``/
``==ERROR==``/``==WARNING==`` lines), a UTF-8 byte-order mark, thousands separators inside
quoted numbers (``"134,221,568"``, ``"5,318,969,728.00"``) and the swapped separators of some
locales (``"5.318.969.728,00"``, decided once per file), ``n/a``, and auto-scaled units.
Every value is converted to a base unit: bytes, nanoseconds, cycles, per-second rates (``1/s``)
and plain counts; ``Kbyte`` = 1,000 bytes (ncu uses decimal prefixes; ncu.md marks this
[unverified] — export with ``--print-units base`` to avoid relying on it).

    ==========================  ============  =================
    Metric Unit, Metric Value   unit (base)   value
    ==========================  ============  =================
    ``byte``, ``"134,221,568"``   byte          134221568.0
    ``usecond``, ``"292.93"``     ns            292930.0
    ``cycle/usecond``, ``"1.5"``  cycle/s       1.5e6
    ==========================  ============  =================
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from collectors.errors import InputError
from collectors.files import regular_file
from collectors.ncu_report import NcuLaunch, NcuReport

LONG_REQUIRED = ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")
"""Columns a long-format export must have."""

ID_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "Section Name",
    "Metric Name",
    "Metric Unit",
    "Metric Value",
    "Rule Name",
    "Rule Type",
    "Rule Description",
    "Estimated Speedup Type",
    "Estimated Speedup",
)
"""Identification and rule columns: everything else in a wide export is a metric."""

_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME_NS = {
    "nsecond": 1.0,
    "ns": 1.0,
    "usecond": 1e3,
    "us": 1e3,
    "msecond": 1e6,
    "ms": 1e6,
    "second": 1e9,
    "s": 1e9,
}
_COUNT_BASES = (
    "byte",
    "cycle",
    "inst",
    "sector",
    "request",
    "warp",
    "thread",
    "block",
    "wavefront",
    "register",
    "SM",
)
_UNSIGNED_BASES = ("ns", "%", "cycle/s", *(_COUNT_BASES))
"""Base units whose values cannot be negative (a negative one is left out with a warning)."""


def known_unit(unit: str) -> bool:
    """Whether *unit* is one :func:`convert_unit` understands: ``""``, ``%``, a time, a clock
    rate (``Ghz``), a prefixed count (``Kbyte``, ``inst``, ``register``, ``SM``...), or a ratio
    ``A/B`` of two such units (``Gbyte/second``, ``inst/cycle``, ``register/thread``)."""
    u = unit.strip()
    if u in ("", "%") or u in _TIME_NS:
        return True
    low = u.lower()
    if low.endswith("hz") and low[:-2].upper() in _PREFIX:
        return True
    if "/" in u:
        num, _, den = u.partition("/")
        return "/" not in den and known_unit(num) and known_unit(den) and num not in ("", "%")
    return any(u.endswith(b) and u[: -len(b)] in _PREFIX for b in _COUNT_BASES)


def convert_unit(unit: str, value: float) -> tuple[float, str]:
    """Convert *value* in ncu's *unit* to gpuscope's base unit; unknown units pass through.

    ``byte``-like counts and cycles keep their name (``Mbyte`` → ``byte`` ×1e6), times go
    to ``ns``, rates ``X/<time>`` and ``hz`` to ``X/s``.
    """
    u = unit.strip()
    if u in ("", "%"):
        return value, u
    low = u.lower()
    if low.endswith("hz") and low[:-2].upper() in _PREFIX:
        return value * _PREFIX[low[:-2].upper()], "cycle/s"
    if u in _TIME_NS:
        return value * _TIME_NS[u], "ns"
    if "/" in u:
        num, _, den = u.partition("/")
        if den in _TIME_NS:
            nval, nunit = convert_unit(num, value)
            return nval * 1e9 / _TIME_NS[den], f"{nunit}/s"
        return value, u
    for base in _COUNT_BASES:
        if u.endswith(base) and u[: -len(base)] in _PREFIX:
            return value * _PREFIX[u[: -len(base)]], base
    return value, u


_US_NUM = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][+-]?\d+)?$")
_EU_NUM = re.compile(r"^[+-]?(\d{1,3}(\.\d{3})+|\d+)(,\d+)?([eE][+-]?\d+)?$")


def _swapped_locale(values: list[str]) -> bool:
    """True when the file writes ``1.234.567,89`` (decided from unambiguous values)."""
    for v in values:
        s = v.strip()
        if s.count(".") > 1 or ("," in s and "." in s and s.rfind(",") > s.rfind(".")):
            return True
        if re.fullmatch(r"[+-]?\d+,\d{1,2}", s):
            return True
    return False


def parse_number(text: str, swapped: bool = False) -> float | None:
    """An ncu value string → float; None for ``n/a``/empty/unparseable."""
    s = text.strip()
    if not s or s.lower() in ("n/a", "nan", "-"):
        return None
    if swapped:
        if not _EU_NUM.match(s):
            return None
        s = s.replace(".", "").replace(",", ".")
    else:
        if not _US_NUM.match(s):
            return None
        s = s.replace(",", "")
    try:
        return float(s)
    except ValueError:  # pragma: no cover - the regexes admit only floats
        return None


def _dims(text: str | None) -> tuple[int, int, int] | None:
    if not text:
        return None
    nums = re.findall(r"\d+", text)
    if len(nums) != 3 or any(len(n) > 9 for n in nums):  # launch dimensions are below 2**31
        return None
    return (int(nums[0]), int(nums[1]), int(nums[2]))


def _int(text: str | None) -> int | None:
    """A non-negative integer below 2**63 written in *text*, else None."""
    if text is None:
        return None
    s = text.strip().replace(",", "")
    return int(s) if s.isdigit() and len(s) < 19 else None


def _split_header(text: str, path: Path) -> tuple[list[str], str]:
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        stripped = line.lstrip("\ufeff").lstrip()
        if stripped.startswith('"ID"') or stripped.startswith("ID,"):
            return [ln.rstrip("\r\n") for ln in lines[:i]], "".join(lines[i:]).lstrip("\ufeff")
    raise InputError(
        'not an Nsight Compute CSV export: no header line starting with "ID" '
        "(export with `ncu --csv` or `ncu --import FILE.ncu-rep --csv`)",
        path=path,
    )


def read_ncu_csv(path: str | Path) -> NcuReport:
    """Parse an ``ncu --csv`` export (long or wide layout).

    Raises:
        InputError: missing/unreadable file, no ``"ID"`` header, required columns absent,
            or no kernel launch in the file.
    """
    p = regular_file(path, directory="is a directory, expected an ncu --csv export")
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=p) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=p) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    preamble, body = _split_header(text, p)
    try:
        # universal newlines: a bare CR (old Mac line ends, or one inside an unquoted field)
        # ends a line instead of raising csv.Error; such a cut row has too few fields and is
        # skipped with a warning
        rows = list(csv.reader(io.StringIO(body.replace("\x00", ""), newline=None)))
    except csv.Error as err:  # a field beyond the csv module's size limit, ...
        raise InputError(f"malformed CSV after line {len(preamble) + 1}: {err}", path=p) from None
    header = [h.strip() for h in rows[0]]
    records = [r for r in rows[1:] if any(c.strip() for c in r)]
    if "Metric Name" in header:
        missing = [c for c in LONG_REQUIRED if c not in header]
        if missing:
            raise InputError(f"ncu CSV lacks column(s) {', '.join(missing)}", path=p)
        launches, warnings = _read_long(header, records)
        layout = "long"
    else:
        if "Kernel Name" not in header:
            raise InputError('ncu CSV lacks the "Kernel Name" column', path=p)
        launches, warnings = _read_wide(header, records)
        layout = "wide"
    if not launches:
        raise InputError("ncu CSV holds no kernel launch (header only)", path=p)
    return NcuReport(str(p), layout, tuple(launches), tuple(warnings), tuple(preamble))


def _launch(
    ident: Mapping[str, str],
    metrics: dict[str, float | None],
    units: dict[str, str],
    raw: dict[str, tuple[str, str]],
) -> NcuLaunch:
    launch_id = _int(ident.get("ID"))
    return NcuLaunch(
        id=-1 if launch_id is None else launch_id,
        kernel_name=ident.get("Kernel Name", ""),
        block=_dims(ident.get("Block Size")),
        grid=_dims(ident.get("Grid Size")),
        device=_int(ident.get("Device")),
        cc=(ident.get("CC") or None),
        process_id=_int(ident.get("Process ID")),
        stream=_int(ident.get("Stream")),
        metrics=MappingProxyType(metrics),
        units=MappingProxyType(units),
        raw=MappingProxyType(raw),
    )


def _read_long(header: list[str], records: list[list[str]]) -> tuple[list[NcuLaunch], list[str]]:
    col = {h: i for i, h in enumerate(header)}
    swapped = _swapped_locale([r[col["Metric Value"]] for r in records if len(r) == len(header)])
    order: list[str] = []
    ident: dict[str, dict[str, str]] = {}
    metrics: dict[str, dict[str, float | None]] = {}
    units: dict[str, dict[str, str]] = {}
    raw: dict[str, dict[str, tuple[str, str]]] = {}
    warnings: list[str] = []
    for n, r in enumerate(records, start=1):
        if len(r) != len(header):
            warnings.append(f"row {n}: {len(r)} fields, header has {len(header)}; skipped")
            continue
        key = r[col["ID"]].strip()
        if key not in ident:
            order.append(key)
            ident[key] = {h: r[i].strip() for i, h in enumerate(header)}
            metrics[key], units[key], raw[key] = {}, {}, {}
        name = r[col["Metric Name"]].strip()
        unit = r[col["Metric Unit"]].strip()
        sval = r[col["Metric Value"]]
        value, base_unit = _value(unit, sval, swapped, f"launch {key}: {name}", warnings)
        if name in metrics[key] and metrics[key][name] != value:
            warnings.append(f"launch {key}: {name} appears twice with different values")
            continue
        metrics[key][name] = value
        units[key][name] = base_unit
        raw[key][name] = (unit, sval)
    return [_launch(ident[k], metrics[k], units[k], raw[k]) for k in order], warnings


def _read_wide(header: list[str], records: list[list[str]]) -> tuple[list[NcuLaunch], list[str]]:
    metric_cols = [i for i, h in enumerate(header) if h not in ID_COLUMNS]
    unit_row: list[str] | None = None
    at = header.index("ID") if "ID" in header else 0
    if records and len(records[0]) == len(header) and not records[0][at].strip():
        unit_row, records = records[0], records[1:]
    swapped = _swapped_locale([r[i] for r in records for i in metric_cols if i < len(r)])
    launches: list[NcuLaunch] = []
    warnings: list[str] = []
    for n, r in enumerate(records, start=1):
        if len(r) != len(header):
            warnings.append(f"row {n}: {len(r)} fields, header has {len(header)}; skipped")
            continue
        ident = {header[i]: r[i].strip() for i in range(len(header)) if header[i] in ID_COLUMNS}
        metrics: dict[str, float | None] = {}
        units: dict[str, str] = {}
        raw: dict[str, tuple[str, str]] = {}
        for i in metric_cols:
            name = header[i]
            unit = unit_row[i].strip() if unit_row else ""
            value, base = _value(unit, r[i], swapped, f"row {n}: {name}", warnings)
            metrics[name], units[name], raw[name] = value, base, (unit, r[i])
        launches.append(_launch(ident, metrics, units, raw))
    return launches, warnings


def _value(
    unit: str, text: str, swapped: bool, where: str, warnings: list[str]
) -> tuple[float | None, str]:
    """One metric value in its base unit, and the base unit; None (with a warning naming
    *where*) when it is not a number, not finite, in a unit ncu does not write
    (:func:`known_unit`), or negative in a unit that cannot be (times, sizes, counts, %)."""
    value = parse_number(text, swapped)
    base = convert_unit(unit, 0.0)[1]
    if value is None:
        if text.strip().lower() not in ("", "n/a"):
            warnings.append(f"{where} = {text!r} is not a number")
        return None, base
    if not known_unit(unit):
        warnings.append(f"{where}: unit {unit!r} is not one ncu writes; value left out")
        return None, unit.strip()
    value, base = convert_unit(unit, value)
    if not math.isfinite(value):
        warnings.append(f"{where} = {text!r} is not a finite number; left out")
        return None, base
    if value < 0 and (base in _UNSIGNED_BASES or base.split("/")[0] in _UNSIGNED_BASES):
        warnings.append(f"{where} = {text!r} {unit} is negative; left out")
        return None, base
    return value, base
