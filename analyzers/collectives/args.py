"""Collective metadata recorded as event arguments: ``record_param_comms`` / kernel
``comm_args``, NCCL NVTX payloads, ``distributedInfo.pg_config`` (normalized; absent keys =
not recorded)."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from collectors.nccl_formulas import canonical_collective, canonical_dtype

if TYPE_CHECKING:
    from collectors.model import Trace


@functools.lru_cache(maxsize=4096)
def _collective_of(name: str) -> str | None:
    return canonical_collective(name)


@functools.lru_cache(maxsize=4096)
def _dtype_of(name: str) -> str | None:
    return canonical_dtype(name)


def collective_of(v: Any) -> str | None:
    """:func:`collectors.nccl_formulas.canonical_collective`, once per distinct string."""
    return _collective_of(v) if isinstance(v, str) else canonical_collective(v)


def dtype_of(v: Any) -> str | None:
    """:func:`collectors.nccl_formulas.canonical_dtype`, once per distinct string."""
    return _dtype_of(v) if isinstance(v, str) else canonical_dtype(v)


def as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
        return int(v)
    return None


def parse_ranks(v: Any) -> tuple[int, ...] | None:
    """``Process Group Ranks`` (a list, or its text ``'[0, 1]'``) as a tuple; None if partial."""
    if isinstance(v, str):
        return _ranks_text(v)
    return _ranks(v)


@functools.lru_cache(maxsize=1024)
def _ranks_text(text: str) -> tuple[int, ...] | None:
    """:func:`parse_ranks` of a text (every collective of a group repeats the same one)."""
    try:
        v = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return None
    return _ranks(v)


def _ranks(v: Any) -> tuple[int, ...] | None:
    if isinstance(v, (list, tuple)) and v and all(as_int(x) is not None for x in v):
        return tuple(int(x) for x in v)
    return None


def meta_from_args(args: Mapping[str, Any] | None) -> dict[str, Any]:
    """Normalized metadata of a ``comm_args`` dict (keys absent when not recorded)."""
    if not args:
        return {}
    out: dict[str, Any] = {}
    coll = collective_of(args.get("Collective name"))
    if coll:
        out["collective"] = coll
    dtype = dtype_of(args.get("dtype"))
    if dtype:
        out["dtype"] = dtype
    for key, name in (("In msg nelems", "in_nelems"), ("Out msg nelems", "out_nelems")):
        v = as_int(args.get(key))
        if v is not None and v >= 0:
            out[name] = v
    gs = as_int(args.get("Group size"))
    if gs is not None and gs > 0:
        out["group_size"] = gs
    pg = args.get("Process Group Name", args.get("Process Group ID"))
    if pg is not None and str(pg) != "":
        out["pg_name"] = str(pg)
    desc = args.get("Process Group Description")
    if isinstance(desc, str) and desc:
        out["pg_desc"] = desc
    ranks = parse_ranks(args.get("Process Group Ranks"))
    if ranks:
        out["pg_ranks"] = ranks
    for key, name in (("Seq", "seq"), ("Src Rank", "src_rank"), ("Dst Rank", "dst_rank")):
        v = as_int(args.get(key))
        if v is not None:
            out[name] = v
    cid = args.get("Comms Id")
    if isinstance(cid, int) and not isinstance(cid, bool):
        out["comms_id"] = cid
    return out


def nvtx_meta(payload: Any, collective: str | None) -> dict[str, Any]:
    """Metadata from an NCCL NVTX range's normalized payload (see collectors.nsys_host)."""
    if not isinstance(payload, dict):
        return {}
    out: dict[str, Any] = {}
    size = as_int(payload.get("message_size_bytes"))
    if size is not None and size >= 0:
        # per rank: AllGather sendcount, ReduceScatter recvcount, others the (input) count
        out["out_bytes" if collective == "reduce_scatter" else "in_bytes"] = size
    cid = payload.get("comm_id")
    if cid is not None:
        out["pg_name"] = f"comm:{int(cid):x}" if as_int(cid) is not None else f"comm:{cid}"
    peer = as_int(payload.get("peer"))
    if peer is not None:
        out["dst_rank" if collective == "send" else "src_rank"] = peer
    return out


def pg_config(trace: Trace) -> dict[str, dict[str, Any]]:
    info = trace.meta.extra.get("distributedInfo") or {}
    out: dict[str, dict[str, Any]] = {}
    for pg in info.get("pg_config") or []:
        if isinstance(pg, dict) and "pg_name" in pg:
            out[str(pg["pg_name"])] = pg
    return out
