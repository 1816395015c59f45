"""The one validating reader of JSON summaries: :func:`read_summary`.

``gate``, ``record``, ``compare``, ``report`` and the HTML page read a summary file only through
it.  It checks, in this order, and raises :class:`collectors.errors.InputError` with one line
naming the file (exit 2):

1. the path is a regular file that can be read (missing, a directory, a FIFO or device,
   unreadable);
2. the bytes are JSON (UTF-8; ``NaN``/``Infinity`` are not JSON — their key path is named);
3. the document is a summary (an object with ``schema_version`` and ``ranks``) of the
   supported ``schema_version``;
4. every key matches :class:`collectors.summary.schema.Summary`: types, required keys, and
   the constraints of the schema (non-negative durations and counts, percentages in [0, 100],
   integers within int64); the message names the key path (``$.ranks[0].steps[3]...``) and,
   where it can be found, the offending value.
"""

from __future__ import annotations

import hashlib
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import msgspec

from collectors.errors import InputError
from collectors.summary.schema import SCHEMA_VERSION, Summary

_NON_FINITE = re.compile(rb"-?(?:NaN|Infinity)")
_BYTE = re.compile(r"\(byte (\d+)\)")
_AT = re.compile(r"^(?P<what>.*?)(?: - at `(?P<path>[^`]*)`)?$")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")
_SENTINEL = "\x00gpuscope-non-finite\x00"
_MAX_PATCHES = 32


class _Head(TypedDict, total=False):
    """What is read before the full validation: is it a summary, and of which version?"""

    schema_version: Any
    ranks: msgspec.Raw


@dataclass(frozen=True)
class SummaryFile:
    """A validated summary and the SHA-256 (hex) of the file's bytes."""

    path: Path
    summary: Summary
    sha256: str


def read_summary(path: str | Path) -> Summary:
    """The validated JSON summary at *path* (plain dicts and lists, typed as :class:`Summary`).

    Raises:
        InputError: see the module docstring (one line, naming the file and the key).
    """
    return read_summary_file(path).summary


def read_summary_file(path: str | Path) -> SummaryFile:
    """:func:`read_summary`, with the SHA-256 of the bytes read (``gpuscope record``)."""
    p = Path(path)
    raw = _read_bytes(p)
    return SummaryFile(p, decode_summary(raw, p), hashlib.sha256(raw).hexdigest())


def decode_summary(raw: bytes, source: str | Path) -> Summary:
    """Validate the bytes of a summary; *source* names it in error messages.

    Raises:
        InputError: not JSON, not a summary, another schema version, or a key of the wrong
            type or value.
    """
    try:
        head = msgspec.json.decode(raw, type=_Head)
    except msgspec.ValidationError as err:  # (a DecodeError too): valid JSON, not an object
        raise InputError(f"not a gpuscope JSON summary ({err})", path=source) from err
    except msgspec.DecodeError as err:
        raise InputError(_json_error(raw, err), path=source) from err
    if "schema_version" not in head or "ranks" not in head:
        raise InputError("not a gpuscope JSON summary (no schema_version/ranks)", path=source)
    version = head["schema_version"]
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise InputError(
            f"summary schema_version {version!r} is not supported "
            f"(this gpuscope reads schema_version {SCHEMA_VERSION})",
            path=source,
        )
    try:
        return msgspec.json.decode(raw, type=Summary)
    except msgspec.ValidationError as err:
        raise InputError(_validation_error(raw, err), path=source) from err
    except msgspec.DecodeError as err:  # e.g. invalid UTF-8 in a string the head skipped
        raise InputError(_json_error(raw, err), path=source) from err


# --- reading ----------------------------------------------------------------------------------
def _read_bytes(p: Path) -> bytes:
    try:
        st = p.stat()
    except FileNotFoundError as err:
        raise InputError("no such file", path=p) from err
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=p) from err
    if stat.S_ISDIR(st.st_mode):
        raise InputError(
            "is a directory; expected a JSON summary (gpuscope analyze --json)", path=p
        )
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            "not a regular file (a FIFO, socket or device); give the summary as a file", path=p
        )
    try:
        return p.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=p) from err


# --- messages ---------------------------------------------------------------------------------
def _json_error(raw: bytes, err: msgspec.DecodeError) -> str:
    """``not valid JSON: ...`` with the line and column, and the key path of a NaN/Infinity."""
    text = str(err)
    m = _BYTE.search(text)
    if m is None:
        return f"not valid JSON: {text}"
    pos = int(m.group(1))
    found = _non_finite_at(raw, pos)
    if found is not None:
        where = _non_finite_path(raw)
        at = f" at {where}" if where else f" ({_line_col(raw, found[0])})"
        return f"not valid JSON: {found[1].decode()}{at} (JSON numbers are finite; write null)"
    return f"not valid JSON: {text} ({_line_col(raw, pos)})"


def _line_col(raw: bytes, pos: int) -> str:
    line = raw.count(b"\n", 0, pos) + 1
    col = pos - (raw.rfind(b"\n", 0, pos) + 1) + 1
    return f"line {line}, column {col}"


def _non_finite_at(raw: bytes, pos: int) -> tuple[int, bytes] | None:
    """(start, token) of a NaN/Infinity/-Infinity where msgspec stopped (at *pos*, or at the
    ``-`` before it)."""
    for start in (pos - 1, pos):
        m = _NON_FINITE.match(raw, start) if start >= 0 else None
        if m is not None and m.end() > pos:
            return start, m.group(0)
    return None


def _non_finite_path(raw: bytes) -> str | None:
    """The key path of the first NaN/Infinity: each one is replaced by a marker string until
    the document parses (at most ``_MAX_PATCHES`` of them), then the first marker is found."""
    patched = raw
    for _ in range(_MAX_PATCHES):
        try:
            doc = msgspec.json.decode(patched)
        except msgspec.ValidationError:  # e.g. a number beyond the double range
            return None
        except msgspec.DecodeError as err:
            m = _BYTE.search(str(err))
            found = _non_finite_at(patched, int(m.group(1))) if m else None
            if found is None:
                return None
            start, token = found
            marker = msgspec.json.encode(_SENTINEL)
            patched = patched[:start] + marker + patched[start + len(token) :]
            continue
        return _find(doc, "$")
    return None


def _find(doc: Any, path: str) -> str | None:
    if doc == _SENTINEL:
        return path
    if isinstance(doc, dict):
        for k, v in doc.items():
            found = _find(v, f"{path}.{k}" if _STEP.fullmatch(f".{k}") else f'{path}["{k}"]')
            if found is not None:
                return found
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found = _find(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def _validation_error(raw: bytes, err: msgspec.ValidationError) -> str:
    """``invalid summary at $.ranks[0].steps[1].duration_ns: Expected `int` >= 0, got -5``."""
    m = _AT.match(str(err))
    what, path = (m.group("what"), m.group("path")) if m else (str(err), None)
    if not path:
        return f"invalid summary: {what}"
    value = _value_at(raw, path) if what.startswith("Expected") else None
    if value is None:
        got = ""
    elif ", got " in what:
        got = f" ({value})"
    else:
        got = f", got {value}"
    return f"invalid summary at {path}: {what}{got}"


def _value_at(raw: bytes, path: str) -> str | None:
    """A short repr of the value at a msgspec key path (None when it cannot be followed)."""
    if not path.startswith("$"):
        return None
    steps = _STEP.findall(path[1:])
    if "".join(f".{k}" if k else f"[{i}]" for k, i in steps) != path[1:]:
        return None  # a dict key msgspec writes as [...]
    try:
        node: Any = msgspec.json.decode(raw)
    except msgspec.DecodeError:  # ValidationError included (a number beyond the double range)
        return None
    for key, index in steps:
        if key and isinstance(node, dict) and key in node:
            node = node[key]
        elif index and isinstance(node, list) and int(index) < len(node):
            node = node[int(index)]
        else:
            return None
    if isinstance(node, (dict, list)):
        return f"a JSON {'object' if isinstance(node, dict) else 'array'}"
    text = repr(node)
    return text if len(text) <= 60 else text[:57] + "..."
