"""Energy per step from the NVML energy counter: one definition for every output.

The sampler (:mod:`profiler.backends.nvml`) writes a ``step_begin`` mark at every step boundary
and reads each GPU's cumulative energy counter (``energy_mj``) right after it.  From those:

* :func:`energy_per_step` — per step and GPU: the counter's difference between the step's two
  boundaries, and the mean power over the step;
* :func:`node_energy_per_step_mj` — per node: the lower median, over the steps for which every
  GPU of the node has both readings, of the step's energy summed over the node's GPUs;
* :func:`run_energy_per_step_mj` — per run: the sum of its nodes' figures.

The JSON summary's ``run.nvml[].energy_steps`` / ``energy_per_step_mj`` and the HTML report's
energy card come from these functions (``docs/report.md``).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd


def energy_per_step(counters: pd.DataFrame) -> pd.DataFrame:
    """Energy of each complete step per device, from the energy counter's deltas.

    Step k runs from its ``step_begin`` row to step k+1's.  The energy at a boundary is the
    first ``energy_mj`` reading of the device at or after the boundary's time (the sampler reads
    the counter right after every boundary); ``energy_mj`` of step k is the difference of the
    two boundary readings, and ``avg_power_w = energy_mj / (end_ns - start_ns) × 1e6``.  A
    missing reading gives NaN.

    Returns:
        DataFrame ``step, device, start_ns, end_ns, energy_mj, avg_power_w`` sorted by device
        then step.
    """
    cols = ["step", "device", "start_ns", "end_ns", "energy_mj", "avg_power_w"]
    marks = counters[counters["name"] == "step_begin"].sort_values("ts_ns", kind="stable")
    energy = counters[counters["name"] == "energy_mj"]
    if len(marks) < 2 or energy.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in cols})
    steps = marks["value"].to_numpy(dtype=np.int64)
    bounds = marks["ts_ns"].to_numpy(dtype=np.int64)
    out = []
    for _, e in energy.groupby("device", sort=True, observed=True):
        e = e.sort_values("ts_ns", kind="stable")
        dev = int(e["device"].to_numpy(dtype=np.int64)[0])
        ts = e["ts_ns"].to_numpy(dtype=np.int64)
        val = e["value"].to_numpy(dtype=np.float64)
        idx = np.searchsorted(ts, bounds, side="left")
        at = np.where(idx < len(ts), val[np.minimum(idx, len(ts) - 1)], np.nan)
        dur = bounds[1:] - bounds[:-1]
        emj = at[1:] - at[:-1]
        out.append(
            pd.DataFrame(
                {
                    "step": steps[:-1],
                    "device": np.full(len(dur), dev, dtype=np.int64),
                    "start_ns": bounds[:-1],
                    "end_ns": bounds[1:],
                    "energy_mj": emj,
                    "avg_power_w": emj / dur * 1e6,
                }
            )
        )
    return pd.concat(out, ignore_index=True)[cols]


def node_energy_per_step_mj(steps: pd.DataFrame) -> float | None:
    """One node's energy per step (module docstring): the lower median over its complete steps
    of Σ over its GPUs of ``energy_mj``; None when no step is complete.

    *steps* is :func:`energy_per_step` of the node's counters; a step is complete when every
    GPU's ``energy_mj`` of it is finite.
    """
    per_step: dict[int, list[float]] = {}
    complete: dict[int, bool] = {}
    ids = steps["step"].to_numpy(dtype=np.int64).tolist()
    values = steps["energy_mj"].to_numpy(dtype=np.float64).tolist()
    for step, mj in zip(ids, values, strict=True):
        per_step.setdefault(step, []).append(mj)
        complete[step] = complete.get(step, True) and bool(np.isfinite(mj))
    sums = sorted(sum(v) for k, v in per_step.items() if complete[k])
    return float(sums[(len(sums) - 1) // 2]) if sums else None


def run_energy_per_step_mj(nodes: Iterable[float]) -> float:
    """A run's energy per step: Σ over its nodes of :func:`node_energy_per_step_mj`."""
    return float(sum(nodes))
