"""The one definition of a sample's median and quantiles (docs/gating.md §2, docs/report.md §3).

* **median**: the middle value of the sorted sample; for an even count, the mean of the two
  middle values (``numpy.median``, ``statistics.median``, pandas, Nsight Systems' ``Med``).
* **quantile** ``Q(q)``, ``0 ≤ q ≤ 1``: linear interpolation between the closest order
  statistics, ``x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`` with ``h = (n − 1)·q`` on the sorted
  sample ``x[0..n-1]`` (Hyndman & Fan's type 7, numpy's and R's default).  ``Q(0.5)`` is the
  median, ``Q(0)`` the minimum, ``Q(1)`` the maximum.

Why this one: the gate's robust statistics (MAD, the standard error of the median) are those
of the ordinary sample median, and it is the median every peer tool and library reports.  An
*observed* quantile (the lower median, one real sample value) would be biased low by half the
middle gap for an even count, and would move the gate's centre by that much.

Both return floats (the mean of two integer-ns step times can be a half nanosecond); an empty
sample has no median (``ValueError``: callers decide what an absent figure is).  Where a JSON
output holds integer ns (the report's cards, ``meta.json``), the figure is rounded to the
nearest ns (:func:`round_ns`), as the summary rounds its kernel medians.  Used by the gate, the
report's headline cards, the run directory's ``meta.json`` and ``gpuscope compare``'s step
distributions.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def _array(values: Iterable[float] | np.ndarray) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return values.astype(np.float64, copy=False)
    return np.asarray(list(values), dtype=np.float64)


def median(values: Iterable[float] | np.ndarray) -> float:
    """The sample median (mean of the two middle values for an even count).

    Raises:
        ValueError: an empty sample.
    """
    x = _array(values)
    if not x.size:
        raise ValueError("the median of an empty sample is undefined")
    return float(np.median(x))


def quantile(values: Iterable[float] | np.ndarray, q: float) -> float:
    """The type-7 (linear) quantile ``Q(q)`` of the sample.

    Raises:
        ValueError: an empty sample, or *q* outside ``[0, 1]``.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile level must lie in [0, 1], got {q}")
    x = _array(values)
    if not x.size:
        raise ValueError("the quantile of an empty sample is undefined")
    return float(np.quantile(x, q))


def round_ns(x: float) -> int:
    """A nanosecond figure rounded to the nearest ns (halves to even, Python's ``round``): the
    summary's convention for figures that are not whole ns (docs/metrics.md §4)."""
    return round(x)
