"""CUDA/HIP-graph capture traces of the command line (``--graph-capture FILE``, TraceLens's
``capture_traces/`` layout, a capture trace named beside its execution trace): shared by
``analyze``, ``report`` and ``compare`` (docs/inference.md "Graph attribution").

Which files are capture traces, and whose:

* every ``--graph-capture FILE`` (its batch size and mode from the ``execution_details.json``
  of its folder when that lists it);
* for every execution trace, the captures ``capture_traces/execution_details.json`` beside it
  lists (:func:`collectors.graph_capture.find_capture_files`);
* among several inputs, a file an ``execution_details.json`` of its folder lists, or (when at
  most :data:`MAX_SCREENED` files are named) one whose bytes hold a stream capture
  (:func:`collectors.graph_capture.records_stream_capture`): it is the capture of the others,
  not a rank of its own (unless every input is one).  A capture
  trace given alone is analysed as a trace; its summary says what it is.

The capture traces are read here, once, and reach the analysis by the rank they claim
(:attr:`analyzers.inputs.AnalysisInputs.graph_captures`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from collectors.errors import InputError

if TYPE_CHECKING:
    from analyzers.serving.graphs import Capture
    from collectors.graph_capture import CaptureFile

GRAPH_CAPTURE_HELP = (
    "A CUDA/HIP-graph capture trace (the Kineto trace recorded while the graphs were captured): "
    "graph-replayed kernels are attributed to the ops that launched them at capture "
    "(repeatable).  TraceLens's capture_traces/execution_details.json beside a trace is found "
    "without it."
)


MAX_SCREENED = 8
"""Inputs screened for a stream capture in their bytes: at most this many named files (the
screen reads each file once more; with more, name the capture traces with --graph-capture)."""


def _is_capture_input(p: Path, several: bool, screen: bool) -> bool:
    from collectors.graph_capture import listed_captures, records_stream_capture

    if not p.is_file() or not several:
        return False
    return bool(listed_captures([p])) or (screen and records_stream_capture(p))


def split_graph_captures(
    paths: Sequence[str], explicit: Sequence[str | Path] = ()
) -> tuple[list[str], dict[int, tuple[Capture, ...]], list[str]]:
    """(the trace inputs, the capture traces by the rank they claim, one note per capture) of
    a command line (module docstring).

    Raises:
        InputError: a ``--graph-capture`` file is missing, unreadable or records no stream
            capture; a capture list beside a trace is invalid.
    """
    from collectors.graph_capture import describe_capture, find_capture_files
    from collectors.load import expand_inputs

    several = len(paths) > 1
    screen = sum(Path(raw).is_file() for raw in paths) <= MAX_SCREENED
    named = [raw for raw in paths if _is_capture_input(Path(raw), several, screen)]
    keep = [raw for raw in paths if raw not in named] or list(paths)
    if len(keep) == len(paths):
        named = []
    files: dict[Path, tuple[CaptureFile, str]] = {}
    for raw in named:
        files[Path(raw).resolve()] = (describe_capture(raw), "named beside the traces")
    kineto = expand_inputs(keep)[0] if keep else []
    for trace in kineto:
        for cf in find_capture_files(trace):
            files.setdefault(cf.path.resolve(), (cf, f"beside {trace.name}"))
    for given in explicit:
        files[Path(given).resolve()] = (describe_capture(given), "--graph-capture")
    captures: dict[int, list[Capture]] = {}
    notes = []
    for cf, how in files.values():
        for cap in _read(cf, strict=how == "--graph-capture"):
            captures.setdefault(cap.trace.rank, []).append(cap)
            size = f", batch size {cf.batch_size} {cf.mode}" if cf.batch_size is not None else ""
            notes.append(
                f"graph capture trace {cf.path} ({how}; rank {cap.trace.rank}{size}): "
                "graph replays are attributed to its ops"
            )
    return keep, {r: tuple(c) for r, c in captures.items()}, notes


def _read(cf: CaptureFile, strict: bool) -> list[Capture]:
    from analyzers.serving.capture import is_capture_trace
    from analyzers.serving.graphs import Capture
    from collectors.kineto import read_kineto_files

    out = []
    for t in read_kineto_files([cf.path]):
        if not is_capture_trace(t):
            if strict:
                raise InputError(
                    "not a graph capture trace: it records no stream capture "
                    "(cudaStreamBeginCapture/hipStreamBeginCapture)",
                    path=cf.path,
                )
            continue
        out.append(Capture(t, batch_size=cf.batch_size, mode=cf.mode))
    return out
