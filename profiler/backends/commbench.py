"""A collective benchmark with torch.distributed in the user's own stack (docs/communication.md §9).

Run on every rank of a job started by ``torchrun``: NCCL on GPUs, gloo on CPU.  For each
collective and message size it measures, like nccl-tests' ``*_perf``:

- ``S`` (``size_bytes``) as in nccl-tests: the per-rank buffer of all_reduce / broadcast, the
  total buffer ``count × n × elt`` of all_gather / reduce_scatter / all_to_all (``count`` is
  then per rank); a requested size is rounded down to a whole number of elements (per rank);
- ``time_us`` = wall time of ``iters`` back-to-back calls ÷ iters, after ``warmup`` calls and
  a barrier, averaged over the ranks (nccl-tests' default ``-a 1``).  On GPUs the time is taken
  with CUDA events on the current stream, on CPU with ``time.perf_counter`` (gloo calls are
  synchronous);
- ``algbw``/``busbw`` from the unrounded time with :mod:`collectors.nccl_formulas`;
- ``wrong`` = elements that differ from the expected result of one extra, checked call (summed
  over ranks), or NaN with ``check=False``.

Placement: torch's all_reduce and broadcast work in place, the ``*_single`` / tensor variants of
all_gather, reduce_scatter and all_to_all out of place; the other placement is not measured
(``N/A`` in the text table).  The result is a list of
:class:`collectors.nccl_tests.NcclTestsLog`, i.e. the same table as a parsed nccl-tests log, and
:func:`format_text` prints it in nccl-tests' own layout.
"""

from __future__ import annotations

import math
import os
import re
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from collectors.errors import MissingDependencyError, UsageError
from collectors.nccl_formulas import bus_factor, canonical_collective, canonical_dtype, dtype_bytes
from collectors.nccl_tests import ROW_COLUMNS, NcclTestsLog

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
"""What commbench can measure, in its default order."""

_PROGRAM = {
    "all_reduce": "all_reduce_perf",
    "all_gather": "all_gather_perf",
    "reduce_scatter": "reduce_scatter_perf",
    "all_to_all": "alltoall_perf",
    "broadcast": "broadcast_perf",
}
_PER_RANK_COUNT = frozenset({"all_gather", "reduce_scatter", "all_to_all"})
_IN_PLACE = frozenset({"all_reduce", "broadcast"})
_NCCL_TESTS_TYPE = {
    "float32": "float",
    "float16": "half",
    "bfloat16": "bfloat16",
    "float64": "double",
    "int32": "int32",
    "int64": "int64",
    "int8": "int8",
    "uint8": "uint8",
}
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@dataclass(frozen=True)
class BenchConfig:
    """What to measure."""

    collectives: tuple[str, ...] = COLLECTIVES
    sizes: tuple[int, ...] = ()
    iters: int = 20
    warmup: int = 5
    dtype: str = "float32"
    check: bool = True


def parse_size(text: str) -> int:
    """Bytes of ``8``, ``1K``, ``4M``, ``1G``, ``1.5M`` (binary units, like nccl-tests ``-b``).

    Raises:
        UsageError: anything else.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise UsageError(f"bad size {text!r}: use a number of bytes with K, M or G (e.g. 64M)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def parse_sizes(spec: str) -> tuple[int, ...]:
    """``MIN:MAX[:FACTOR]`` (× FACTOR each step, default 2) or a comma list of sizes.

    Raises:
        UsageError: malformed, MIN > MAX, FACTOR < 2, or more than 64 sizes.
    """
    if ":" in spec:
        parts = spec.split(":")
        if len(parts) not in (2, 3):
            raise UsageError(f"bad --sizes {spec!r}: use MIN:MAX or MIN:MAX:FACTOR")
        lo, hi = parse_size(parts[0]), parse_size(parts[1])
        factor = int(parts[2]) if len(parts) == 3 and parts[2].strip().isdigit() else 2
        if len(parts) == 3 and not parts[2].strip().isdigit():
            raise UsageError(f"bad --sizes factor {parts[2]!r}: an integer ≥ 2")
        if lo > hi or factor < 2 or lo <= 0:
            raise UsageError(f"bad --sizes {spec!r}: need 0 < MIN ≤ MAX and FACTOR ≥ 2")
        out = []
        s = lo
        while s <= hi:
            out.append(s)
            s *= factor
    else:
        out = [parse_size(p) for p in spec.split(",") if p.strip()]
    if not out or len(out) > 64:
        raise UsageError(f"--sizes {spec!r} gives {len(out)} sizes (1 to 64 allowed)")
    return tuple(out)


def parse_collectives(spec: str) -> tuple[str, ...]:
    """Comma list of collective names (any spelling), ``all`` for every one.

    Raises:
        UsageError: a name commbench does not measure.
    """
    if spec.strip().lower() == "all":
        return COLLECTIVES
    out = []
    for part in spec.split(","):
        if not part.strip():
            continue
        c = canonical_collective(part.strip())
        if c not in COLLECTIVES:
            raise UsageError(
                f"unknown collective {part.strip()!r}: choose from {', '.join(COLLECTIVES)}"
            )
        if c not in out:
            out.append(c)
    if not out:
        raise UsageError("--collectives is empty")
    return tuple(out)


def torch_distributed() -> Any:
    """torch, once torch.distributed is known to be available.

    Raises:
        MissingDependencyError: torch is absent or has no torch.distributed.
    """
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        raise MissingDependencyError(
            "commbench needs torch (install the build that matches your machine)"
        ) from None
    if not dist.is_available():
        raise MissingDependencyError("this torch build has no torch.distributed")
    return torch


def _counts(coll: str, size: int, elt: int, n: int) -> tuple[int, int]:
    """(count passed to the call, S actually moved) for a requested size."""
    if coll in _PER_RANK_COUNT:
        count = size // (elt * n)
        return count, count * elt * n
    count = size // elt
    return count, count * elt


class _Bench:
    """One rank's view: tensors, timing and checking of each collective."""

    def __init__(self, torch: Any, device: Any, dtype: Any) -> None:
        self.torch = torch
        self.dist = torch.distributed
        self.device = device
        self.dtype = dtype
        self.rank = self.dist.get_rank()
        self.n = self.dist.get_world_size()
        self.cuda = device.type == "cuda"

    def _call(self, coll: str, count: int) -> tuple[Any, Any]:
        """(callable doing one collective, output tensor) for *count* elements."""
        t, d, n = self.torch, self.dist, self.n
        kw = {"device": self.device, "dtype": self.dtype}
        if coll == "all_reduce":
            buf = t.ones(count, **kw)
            return (lambda: d.all_reduce(buf)), buf
        if coll == "broadcast":
            buf = t.ones(count, **kw)
            return (lambda: d.broadcast(buf, 0)), buf
        if coll == "all_gather":
            inp, out = t.ones(count, **kw), t.empty(count * n, **kw)
            fn = getattr(d, "all_gather_single", None) or d.all_gather_into_tensor
            return (lambda: fn(out, inp)), out
        if coll == "reduce_scatter":
            inp, out = t.ones(count * n, **kw), t.empty(count, **kw)
            fn = getattr(d, "reduce_scatter_single", None) or d.reduce_scatter_tensor
            return (lambda: fn(out, inp)), out
        inp, out = t.ones(count * n, **kw), t.empty(count * n, **kw)
        return (lambda: d.all_to_all_single(out, inp)), out

    def time_us(self, coll: str, count: int, iters: int, warmup: int) -> float:
        """Mean time of one call in µs, averaged over the ranks."""
        fn, _ = self._call(coll, count)
        for _ in range(warmup):
            fn()
        if self.cuda:
            self.torch.cuda.synchronize()
        self.dist.barrier()
        if self.cuda:
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            end.synchronize()
            us = start.elapsed_time(end) * 1e3 / iters
        else:
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            us = (time.perf_counter() - t0) * 1e6 / iters
        v = self.torch.tensor([us], dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(v)
        return float(v.item()) / self.n

    def wrong(self, coll: str, count: int) -> int:
        """Elements differing from the expected result of one call, summed over ranks."""
        t, d, n, r = self.torch, self.dist, self.n, self.rank
        kw = {"device": self.device, "dtype": self.dtype}
        idx = t.arange(n, device=self.device, dtype=self.dtype)
        if coll == "all_reduce":
            buf = t.full((count,), r + 1, **kw)
            d.all_reduce(buf)
            bad = (buf != n * (n + 1) / 2).sum()
        elif coll == "broadcast":
            buf = t.full((count,), r + 1, **kw)
            d.broadcast(buf, 0)
            bad = (buf != 1).sum()
        elif coll == "all_gather":
            out = t.empty(count * n, **kw)
            fn = getattr(d, "all_gather_single", None) or d.all_gather_into_tensor
            fn(out, t.full((count,), r + 1, **kw))
            bad = (out != (idx + 1).repeat_interleave(count)).sum()
        elif coll == "reduce_scatter":
            out = t.empty(count, **kw)
            fn = getattr(d, "reduce_scatter_single", None) or d.reduce_scatter_tensor
            fn(out, (idx + 1 + r).repeat_interleave(count))
            # rank r's chunk: Σ_k (r + 1 + k) over ranks k
            bad = (out != n * (r + 1) + n * (n - 1) / 2).sum()
        else:
            out = t.empty(count * n, **kw)
            # chunk j of rank r holds r·n + j; after all_to_all chunk j of rank r holds j·n + r
            d.all_to_all_single(out, (r * n + idx).repeat_interleave(count))
            bad = (out != (idx * n + r).repeat_interleave(count)).sum()
        v = t.tensor([int(bad.item())], dtype=t.int64, device=self.device)
        d.all_reduce(v)
        return int(v.item())


def _device(torch: Any) -> Any:
    backend = torch.distributed.get_backend()
    if backend == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _torch_dtype(torch: Any, name: str) -> Any:
    c = canonical_dtype(name)
    if c is None or c not in _NCCL_TESTS_TYPE or not hasattr(torch, c):
        raise UsageError(
            f"unsupported --dtype {name!r}: choose from {', '.join(sorted(_NCCL_TESTS_TYPE))}"
        )
    return getattr(torch, c)


def _devices(torch: Any) -> list[tuple[str, int, int, str]]:
    """(host, pid, device index, device name) of every rank, gathered from all of them."""
    dist = torch.distributed
    dev = _device(torch)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    mine = (socket.gethostname(), os.getpid(), dev.index if dev.index is not None else 0, name)
    every: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(every, mine)
    return [tuple(e) for e in every]


def run_commbench(config: BenchConfig) -> list[NcclTestsLog]:
    """Measure every (collective, size) of *config*; call on every rank of an initialized group.

    Returns one log per collective (the same on every rank).

    Raises:
        MissingDependencyError: torch / torch.distributed absent.
        UsageError: the process group is not initialized, or a bad dtype.
    """
    torch = torch_distributed()
    dist = torch.distributed
    if not dist.is_initialized():
        raise UsageError("torch.distributed is not initialized (launch under torchrun)")
    tdtype = _torch_dtype(torch, config.dtype)
    elt = dtype_bytes(config.dtype) or 4
    bench = _Bench(torch, _device(torch), tdtype)
    n = bench.n
    devices = _devices(torch)
    logs = []
    for coll in config.collectives:
        rows = []
        for size in config.sizes:
            count, s_eff = _counts(coll, size, elt, n)
            us = bench.time_us(coll, count, config.iters, config.warmup)
            wrong = (
                bench.wrong(coll, count)
                if config.check and count
                else (0 if config.check else math.nan)
            )
            alg = s_eff / (us * 1e3) if us > 0 else math.nan
            bus = alg * bus_factor(coll, n)
            measured = "in_place" if coll in _IN_PLACE else "out_of_place"
            for placement in ("out_of_place", "in_place"):
                m = placement == measured
                rows.append(
                    {
                        "collective": coll,
                        "size_bytes": s_eff,
                        "count": count,
                        "dtype": canonical_dtype(config.dtype),
                        "redop": "sum" if coll in ("all_reduce", "reduce_scatter") else "none",
                        "root": 0 if coll == "broadcast" else -1,
                        "placement": placement,
                        "time_us": us if m else math.nan,
                        "algbw_gbps": alg if m else math.nan,
                        "busbw_gbps": bus if m else math.nan,
                        "wrong": wrong if m else math.nan,
                        "algbw_expected": alg if m else math.nan,
                        "busbw_expected": bus if m else math.nan,
                        "algbw_ok": True if m else None,
                        "busbw_ok": True if m else None,
                        "line": -1,
                    }
                )
        df = pd.DataFrame(rows, columns=list(ROW_COLUMNS))
        for c in ("algbw_ok", "busbw_ok"):
            df[c] = df[c].astype("boolean")
        hosts = tuple(dict.fromkeys(d[0] for d in devices))
        logs.append(
            NcclTestsLog(
                path=None,
                collective=coll,
                collective_source="commbench",
                nranks=n,
                nranks_source="commbench",
                rows=df,
                layout="commbench",
                time_unit="us",
                devices=tuple(d[3] for d in devices),
                hosts=hosts,
                version=None,
                params={
                    "backend": str(dist.get_backend()),
                    "iters": str(config.iters),
                    "warmup iters": str(config.warmup),
                    "torch": str(torch.__version__),
                    "validation": "1" if config.check else "0",
                    "rank_hosts": ",".join(d[0] for d in devices),
                    "rank_pids": ",".join(str(d[1]) for d in devices),
                    "rank_device_ids": ",".join(str(d[2]) for d in devices),
                },
                avg_busbw_footer=None,
                warnings=(),
            )
        )
    return logs


def _fmt(value: float, width: int = 7) -> str:
    """nccl-tests' number format: %.2f, then %.1f, %.0f, %.1e to fit the width."""
    if math.isnan(value):
        return "N/A"
    for p in (2, 1, 0):
        s = f"{value:.{p}f}"
        if len(s) <= width:
            return s
    return f"{value:.1e}"


def format_text(logs: Sequence[NcclTestsLog]) -> str:
    """The logs in nccl-tests 2.13+'s text layout (one section per collective).

    The output parses with :func:`collectors.nccl_tests.parse_nccl_tests_text`.
    """
    lines: list[str] = []
    for log in logs:
        r = log.rows
        sizes = r["size_bytes"]
        p = log.params
        lines += [
            f"# gpuscope commbench: torch {p.get('torch')} backend {p.get('backend')} "
            f"world {log.nranks}",
            f"# Collective test starting: {_PROGRAM.get(log.collective or '', 'unknown')}",
            f"# nThread 1 nGpus 1 minBytes {int(sizes.min()) if len(r) else 0} maxBytes "
            f"{int(sizes.max()) if len(r) else 0} step: 2(factor) warmup iters: "
            f"{p.get('warmup iters')} iters: {p.get('iters')} agg iters: 1 validation: "
            f"{p.get('validation')} graph: 0",
            "#",
            "# Using devices",
        ]
        hosts = p.get("rank_hosts", "").split(",")
        pids = p.get("rank_pids", "").split(",")
        ids = p.get("rank_device_ids", "").split(",")
        for rank, dev in enumerate(log.devices):
            lines.append(
                f"#  Rank {rank:2d} Group  0 Pid {int(pids[rank]):6d} on {hosts[rank]:>10s} "
                f"device {int(ids[rank]):2d} [-] {dev}"
            )
        lines += [
            "#",
            "#" + " " * 46 + "out-of-place" + " " * 23 + "in-place",
            "#       size         count      type   redop    root     time   algbw   busbw "
            "#wrong     time   algbw   busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
            "            (us)  (GB/s)  (GB/s)",
        ]
        bus_all = []
        for _, grp in r.groupby(["size_bytes", "count"], sort=False):
            first = grp.iloc[0]
            size, count = int(first["size_bytes"]), int(first["count"])
            ty = _NCCL_TESTS_TYPE.get(str(first["dtype"]), str(first["dtype"]))
            line = f"{int(size):12d}  {int(count):12d}  {ty:>8s}  {first['redop']:>6s}  " + (
                f"{int(first['root']):6d}"
            )
            for placement in ("out_of_place", "in_place"):
                g = grp[grp["placement"] == placement].iloc[0]
                wrong = "N/A" if math.isnan(g["wrong"]) else str(int(g["wrong"]))
                line += (
                    f"  {_fmt(g['time_us']):>7s}  {_fmt(g['algbw_gbps'], 6):>6s}  "
                    f"{_fmt(g['busbw_gbps'], 6):>6s}  {wrong:>5s}"
                )
                if not math.isnan(g["busbw_gbps"]):
                    bus_all.append(float(g["busbw_gbps"]))
            lines.append(line)
        avg = sum(bus_all) / len(bus_all) if bus_all else 0.0
        lines.append(f"# Avg bus bandwidth    : {avg:g}")
        lines.append("#")
    return "\n".join(lines) + "\n"
