"""Many-rank Kineto traces derived from a real one: its steps replicated, its ranks shifted.

The source trace (default: the shared ``nccl_parser_config/nccl_data.json.gz``, rank 0 of a
2-rank NCCL job with collective metadata on its kernels, 3 ProfilerSteps) is split by time:

* **head**: events before the first ``ProfilerStep#`` starts (and events without ``ts``, such
  as the ``M`` metadata), written once;
* **body**: events starting inside ``[first step start, last step end)``, written ``k`` times;
  copy ``i`` is shifted by ``i`` × the body's span, its steps renamed ``ProfilerStep#(N + i·S)``
  (``S`` steps in the source) and its ids (``correlation``, ``External id``, flow ``id``,
  ``Ev Idx``, ``Record function id``, ``Seq``) offset so that they stay unique and linked;
* **tail**: events starting after the body, shifted and offset like the last copy.

``k`` is chosen so that each rank's JSON is about ``--target-mb`` MB.  Rank ``r`` is the
result shifted by ``r × --shift-ns`` and carries ``distributedInfo.rank = r`` and
``world_size = --ranks`` (its process group lists every rank).  Times are handled as exact
integer nanoseconds (the reader's rule, docs/kineto-reader.md) and written as µs with at most 3
decimals.  Files: ``OUT/rank-<r>.json.gz`` (gzip level 1).  Same arguments → same bytes.

Usage::

    python benchmarks/scale_generator.py OUT [--ranks 64] [--target-mb 50] [--source FILE]
    python benchmarks/scale_generator.py OUT --small      # 8 ranks × the source's size
"""

from __future__ import annotations

import argparse
import copy
import gzip
import io
import math
import os
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GPUSCOPE_SHARED", REPO.parent / "shared"))
DEFAULT_SOURCE = SHARED / "data" / "kineto" / "hta" / "nccl_parser_config" / "nccl_data.json.gz"
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
ID_ARGS = ("correlation", "External id", "Ev Idx", "Record function id", "Seq")
"""Integer ``args`` that identify or link events, offset per copy."""
EXACT_LIMIT_US = 2**43
"""Below this many µs a float with 3 decimals converts back to the same ns (the reader's rule)."""


def to_ns(v: Any) -> int:
    """Exact ns of a Kineto µs value (integers × 1000; floats: whole part + rounded fraction)."""
    if isinstance(v, int):
        return v * 1000
    whole = math.floor(v)
    return int(whole) * 1000 + round((v - whole) * 1000)


def to_us(ns: int, as_int: bool) -> int | float:
    """µs to write: an integer when the source wrote integers and *ns* is whole µs."""
    if as_int and ns % 1000 == 0:
        return ns // 1000
    return ns / 1000


def load(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = msgspec.json.decode(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        sys.exit(f"{path}: not a Kineto trace")
    return doc


class Template:
    """The source split into head, body and tail, with exact ns times (see module docstring)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        events = doc["traceEvents"]
        steps = [
            e for e in events if isinstance(e.get("name"), str) and STEP_RE.match(e["name"])
            and e.get("ph") == "X" and "ts" in e
        ]  # fmt: skip
        if not steps:
            sys.exit("the source trace has no ProfilerStep#N event to replicate")
        self.step_numbers = sorted({int(STEP_RE.match(e["name"]).group(1)) for e in steps})  # type: ignore[union-attr]
        self.n_steps = self.step_numbers[-1] - self.step_numbers[0] + 1
        start = min(to_ns(e["ts"]) for e in steps)
        end = max(to_ns(e["ts"]) + to_ns(e.get("dur", 0)) for e in steps)
        self.span_ns = end - start
        self.int_times = all(isinstance(e.get("ts"), int) for e in events if "ts" in e)
        self.head: list[dict[str, Any]] = []
        self.body: list[dict[str, Any]] = []
        self.tail: list[dict[str, Any]] = []
        for e in events:
            if "ts" not in e or not isinstance(e["ts"], (int, float)):
                self.head.append(e)
                continue
            t = to_ns(e["ts"])
            (self.head if t < start else self.body if t < end else self.tail).append(e)
        self.id_span = {k: 1 + max(self._ids(k), default=0) for k in ID_ARGS}
        self.flow_span = 1 + max(
            (e["id"] for e in events if isinstance(e.get("id"), int)), default=0
        )
        self.bytes_per_event = len(msgspec.json.encode(events)) / max(1, len(events))

    def _ids(self, key: str) -> list[int]:
        return [
            e["args"][key]
            for e in self.doc["traceEvents"]
            if isinstance(e.get("args"), dict) and isinstance(e["args"].get(key), int)
        ]

    def copies_for(self, target_bytes: float) -> int:
        fixed = (len(self.head) + len(self.tail)) * self.bytes_per_event
        per_copy = max(1.0, len(self.body) * self.bytes_per_event)
        return max(1, round((target_bytes - fixed) / per_copy))

    def _shifted(self, e: dict[str, Any], i: int) -> dict[str, Any]:
        out = copy.copy(e)
        out["_ns"] = to_ns(e["ts"]) + i * self.span_ns
        if i == 0:
            return out
        name = e.get("name")
        m = STEP_RE.match(name) if isinstance(name, str) else None
        if m:
            out["name"] = f"ProfilerStep#{int(m.group(1)) + i * self.n_steps}"
        if isinstance(e.get("id"), int):
            out["id"] = e["id"] + i * self.flow_span
        args = e.get("args")
        if isinstance(args, dict) and any(isinstance(args.get(k), int) for k in ID_ARGS):
            args = dict(args)
            for k in ID_ARGS:
                if isinstance(args.get(k), int) and args[k] >= 0:
                    args[k] += i * self.id_span[k]
            out["args"] = args
        return out

    def pieces(self, k: int) -> Iterator[list[dict[str, Any]]]:
        """One rank's events with *k* copies of the body, a piece at a time (the head, each
        copy, the tail; times in ``_ns``, not yet written): a 2 GB rank is never held whole."""
        yield [e if "ts" not in e else {**e, "_ns": to_ns(e["ts"])} for e in self.head]
        for i in range(k):
            yield [self._shifted(e, i) for e in self.body]
        yield [self._shifted(e, k - 1) for e in self.tail]

    def replicate(self, k: int) -> list[dict[str, Any]]:
        """:meth:`pieces` as one list."""
        return [e for piece in self.pieces(k) for e in piece]

    def count(self, k: int) -> int:
        """Events in a rank with *k* copies."""
        return len(self.head) + k * len(self.body) + len(self.tail)

    def last_ns(self, k: int) -> int:
        """The latest ``_ns`` of a rank with *k* copies (before the rank shift)."""
        head = [to_ns(e["ts"]) for e in self.head if "ts" in e]
        rest = [to_ns(e["ts"]) for e in (*self.body, *self.tail)]
        return max([*head, *(t + (k - 1) * self.span_ns for t in rest)], default=0)


def _rank_header(tpl: Template, rank: int, ranks: int) -> dict[str, Any]:
    doc = {k: v for k, v in tpl.doc.items() if k != "traceEvents"}
    info = dict(doc.get("distributedInfo") or {})
    info.update(rank=rank, world_size=ranks)
    if isinstance(info.get("pg_config"), list):
        info["pg_config"] = [
            {**pg, "pg_size": ranks, "ranks": list(range(ranks))} if isinstance(pg, dict) else pg
            for pg in info["pg_config"]
        ]
    doc["distributedInfo"] = info
    return doc


def _written(tpl: Template, events: list[dict[str, Any]], shift: int) -> list[dict[str, Any]]:
    out = []
    for e in events:
        if "_ns" not in e:
            out.append(e)
            continue
        w = {k: v for k, v in e.items() if k != "_ns"}
        w["ts"] = to_us(e["_ns"] + shift, tpl.int_times)
        out.append(w)
    return out


def write_rank(
    out: BinaryIO,
    tpl: Template,
    pieces: Iterable[list[dict[str, Any]]],
    rank: int,
    ranks: int,
    shift_ns: int,
) -> None:
    """Write the gzip-compressed JSON of *rank* to *out*, piece by piece: the same bytes as
    encoding the whole document at once (keys in the source's order, compact JSON)."""
    doc = _rank_header(tpl, rank, ranks)  # traceEvents comes last, as when encoded whole
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1, mtime=0, filename="") as z:
        z.write(b"{")
        for key, value in doc.items():
            z.write(msgspec.json.encode(key) + b":" + msgspec.json.encode(value) + b",")
        z.write(b'"traceEvents":[')
        sep = b""
        for piece in pieces:
            if piece:
                z.write(sep + msgspec.json.encode(_written(tpl, piece, rank * shift_ns))[1:-1])
                sep = b","
        z.write(b"]}")


def render_rank(
    tpl: Template, events: list[dict[str, Any]], rank: int, ranks: int, shift_ns: int
) -> bytes:
    """The gzip-compressed JSON of *rank*."""
    buf = io.BytesIO()
    write_rank(buf, tpl, [events], rank, ranks, shift_ns)
    return buf.getvalue()


def generate(
    out_dir: Path,
    ranks: int,
    target_mb: float,
    source: Path = DEFAULT_SOURCE,
    shift_ns: int = 1_500,
    log: Any = print,
    copies: int | None = None,
) -> list[Path]:
    """Write ``rank-<r>.json.gz`` for ``r < ranks`` into *out_dir*; returns the paths.
    *copies*: the number of body copies (default: from *target_mb*)."""
    tpl = Template(load(source))
    k = copies if copies is not None else tpl.copies_for(target_mb * 1e6)
    last_ns = tpl.last_ns(k) + (ranks - 1) * shift_ns
    if not tpl.int_times and last_ns >= EXACT_LIMIT_US * 1000:
        sys.exit("shifted times would leave the range where µs floats are exact; lower --ranks")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for r in range(ranks):
        p = out_dir / f"rank-{r}.json.gz"
        with open(p, "wb") as f:
            write_rank(f, tpl, tpl.pieces(k), r, ranks, shift_ns)
        paths.append(p)
    log(
        f"{ranks} ranks x {tpl.count(k)} events ({k} copies of {tpl.n_steps} steps from "
        f"{source.name}), {sum(p.stat().st_size for p in paths) / 1e6:.0f} MB gzip in {out_dir}"
    )
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--target-mb", type=float, default=50.0, help="uncompressed MB per rank")
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--shift-ns", type=int, default=1_500, help="time shift between ranks")
    ap.add_argument("--small", action="store_true", help="8 ranks, one copy of the steps")
    ap.add_argument("--copies", type=int, help="copies of the steps (instead of --target-mb)")
    a = ap.parse_args(argv)
    if a.small:
        a.ranks, a.target_mb = 8, 0.0
    if a.ranks < 1:
        ap.error("--ranks must be >= 1")
    if not a.source.exists():
        ap.error(f"{a.source}: no such file (set GPUSCOPE_SHARED or pass --source)")
    if a.copies is not None and a.copies < 1:
        ap.error("--copies must be >= 1")
    generate(a.out_dir, a.ranks, a.target_mb, a.source, a.shift_ns, copies=a.copies)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
