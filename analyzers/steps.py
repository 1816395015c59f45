"""Per-step breakdown: what the GPU did during each ProfilerStep of the window.

A step is a ``ProfilerStep#N`` annotation ``[start_ns, end_ns)`` on the host clock (the range
``torch.profiler`` records around one ``step()``).  The steps listed are those of the window
(:func:`analyzers.window.window`: all but the last by default, every step with
``--all-events``).  With ``G``, ``P`` and ``C`` as in :mod:`analyzers.temporal` (the window's
GPU events, merged computation, merged communication), each step reports:

- ``duration_ns`` = end − start;
- ``compute_ns`` = |P ∩ step|: time in the step when some computation kernel runs;
- ``exposed_comm_ns`` = |(C \\ P) ∩ step|: communication with no computation beside it;
- ``idle_ns`` = duration − |merged(G) ∩ step|: time in the step when no GPU event runs.

GPU work is clipped to the step's range: a kernel launched in step N that runs after step N
ends counts towards the next step's range (or no step).  The remainder of a step,
``duration − compute − exposed_comm − idle``, is time when only MEMORY / OTHER events run.

    ==========================================  ========  =======  =======  ====
    step [0,100); gemm [10,40), nccl [30,70)    duration  compute  exposed  idle
    ==========================================  ========  =======  =======  ====
                                                100       30       30       40
    ==========================================  ========  =======  =======  ====
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from analyzers import intervals as iv
from analyzers.options import AnalysisOptions
from analyzers.temporal import exposed_comm_intervals, typed_intervals
from analyzers.window import window

if TYPE_CHECKING:
    import pandas as pd

    from collectors.model import Trace

STEP_COLUMNS = (
    "step",
    "start_ns",
    "end_ns",
    "duration_ns",
    "compute_ns",
    "exposed_comm_ns",
    "idle_ns",
)


def window_steps(trace: Trace, options: AnalysisOptions) -> pd.DataFrame:
    """``trace.steps()`` that start before the window's end (all of them when unfiltered)."""
    w = window(trace, options)
    steps = trace.steps()
    if w.filtered and w.end_ns is not None:
        steps = steps[steps["start_ns"].to_numpy() < w.end_ns]
    return steps


def step_breakdown(trace: Trace, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """One row per ProfilerStep of the window, columns :data:`STEP_COLUMNS` (all int64)."""
    import pandas as pd

    options = options or AnalysisOptions()
    steps = window_steps(trace, options)
    lo = steps["start_ns"].to_numpy(dtype=np.int64)
    hi = steps["end_ns"].to_numpy(dtype=np.int64)
    ti = typed_intervals(trace, options)
    duration = hi - lo
    busy = iv.covered_in_windows(ti.busy, lo, hi)
    return pd.DataFrame(
        {
            "step": steps["step"].to_numpy(dtype=np.int64),
            "start_ns": lo,
            "end_ns": hi,
            "duration_ns": duration,
            "compute_ns": iv.covered_in_windows(ti.compute, lo, hi),
            "exposed_comm_ns": iv.covered_in_windows(exposed_comm_intervals(ti), lo, hi),
            "idle_ns": duration - busy,
        },
        columns=list(STEP_COLUMNS),
    )
