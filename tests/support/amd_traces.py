"""The AMD Instinct traces of the shared data: TraceLens's MI300X/MI210 traces and HTA's MI250
trace, their raw kernel events, and loaded traces (cached per path)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from collectors.model import Trace
from tests.support.env import SHARED_DATA, shared_path
from tests.support.raw_kineto import document

TRACELENS = ("kineto", "tracelens")
HTA_MI250 = ("kineto", "hta", "amd_trace", "mi250_minitoy_train_ROCm6_2_kineto.json.gz")


def tracelens_traces() -> list[str]:
    """Paths (relative to the TraceLens folder) of every TraceLens trace; [] when absent."""
    root = SHARED_DATA.joinpath(*TRACELENS)
    if not root.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json.gz"))


def tracelens_path(rel: str) -> Path:
    return shared_path(*TRACELENS, *rel.split("/"))


@cache
def raw_events(path: Path) -> dict[str, Any]:
    """The trace's JSON document, read independently of gpuscope's reader."""
    return document(path)


@cache
def load(path: Path) -> Trace:
    from collectors.load import load_traces

    (t,) = load_traces([path])
    return t
