"""The rank metadata document, ``RUN/ranks/rank-<r>.json``: what one profiled process records
of itself (fields defined in ``docs/capture.md``; merged into ``meta.json`` by
:func:`profiler.rundir.write_meta`).  Standard library only (written by the training process).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from profiler import environment
from profiler.config import StepWindow

RANK_META_VERSION = 1


def steps_captured(window: StepWindow, step_index: int) -> list[int] | None:
    """``[first, last]`` steps of *window* a trace holds when the session is at step
    *step_index* (the window cut at the running step), or None when none of them ran."""
    last = min(window.stop, step_index + 1) - 1
    return [window.start, last] if last >= window.start else None


def rank_meta(
    *,
    rank_info: dict[str, Any],
    host: str,
    backend: str,
    backend_facts: dict[str, Any],
    window: StepWindow,
    captured: list[int] | None,
    trace: str | None,
    step_source: str | None,
    steps_completed: int,
    step_times_ns: list[int],
    regions: dict[str, Any],
    started_unix_ns: int,
    stopped_unix_ns: int | None,
    stop_reason: str | None,
    nvml: dict[str, Any] | None,
    errors: list[str],
) -> dict[str, Any]:
    """The document, keys in their documented order (the process's versions, GPUs and CUDA
    device are read here)."""
    return {
        "schema_version": RANK_META_VERSION,
        **rank_info,
        "host": host,
        "pid": os.getpid(),
        "argv": list(sys.argv),
        "backend": backend,
        "torch_activities": backend_facts.get("torch_activities"),
        "window": str(window),
        "steps_captured": captured,
        "trace": trace,
        "step_source": step_source,
        "steps_completed": steps_completed,
        "step_times_ns": list(step_times_ns),
        "regions": regions,
        "started_unix_ns": started_unix_ns,
        "stopped_unix_ns": stopped_unix_ns,
        "stop_reason": stop_reason,
        "versions": environment.versions(),
        "gpus": environment.torch_gpus(),
        "cuda_device": environment.current_cuda_device(),
        "nvml": nvml,
        "errors": list(errors),
    }


def write_json(path: Path, doc: dict[str, Any]) -> None:
    """Write *doc* to *path* atomically (a temporary file beside it, then a rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
