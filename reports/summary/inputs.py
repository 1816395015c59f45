"""The side inputs of a summary from the older ``extras`` mapping (paths loaded here, once).

``build_summary(traces, extras={...})`` is still accepted from callers written for it (the
keys ``ncu``, ``ncu_gpu``, ``gpu_peaks``, ``nvml``, ``run_dir``); new code builds an
:class:`analyzers.inputs.AnalysisInputs` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analyzers.inputs import AnalysisInputs

EXTRAS_KEYS = ("ncu", "ncu_gpu", "gpu_peaks", "nvml", "run_dir")


def inputs_from_extras(extras: Mapping[str, Any]) -> AnalysisInputs:
    """Load what *extras* names: a peak file path (``gpu_peaks``), the ncu ceilings of a GPU
    name (``ncu_gpu``, only with ``ncu``), ``RUN/meta.json`` of ``run_dir``.

    Raises:
        ValueError: an unknown key (a side input no section reads).
        InputError: the peak file is missing or invalid.
        UsageError: ``ncu_gpu`` names no known GPU.
    """
    unknown = sorted(set(extras) - set(EXTRAS_KEYS))
    if unknown:
        raise ValueError(f"unknown side input(s) {unknown}: known are {', '.join(EXTRAS_KEYS)}")
    from collectors.peaks import PeakTable, load_peaks
    from collectors.rundir import read_run_meta

    peaks = extras.get("gpu_peaks")
    table = peaks if isinstance(peaks, PeakTable) or peaks is None else load_peaks(Path(peaks))
    ncu = extras.get("ncu")
    ncu_peaks = None
    if ncu is not None and extras.get("ncu_gpu"):
        from analyzers.gpu_peaks import peaks_named

        ncu_peaks = peaks_named(table or load_peaks(None), str(extras["ncu_gpu"]))
    return AnalysisInputs(
        ncu=ncu,
        ncu_peaks=ncu_peaks,
        gpu_peaks=table,
        nvml=dict(extras.get("nvml") or {}),
        run_meta=read_run_meta(extras.get("run_dir")),
    )
