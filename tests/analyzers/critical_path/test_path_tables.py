"""A step path's figures from its segment table equal their definitions on the segment list:
the longest segments (ties in path order) and the totals per (cause, detail, rank) in the
order of their first segment, on random tables with ties and late ranks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.critical_path.blame import Segment, Segments, StepPath

CAUSES = ("cpu", "compute", "late_rank", "launch_gap")
DETAILS = ("", "GEMM", "host", "x")

segments = st.lists(
    st.tuples(
        st.integers(0, 3),  # rank
        st.integers(1, 6),  # duration: ties
        st.sampled_from(CAUSES),
        st.sampled_from(DETAILS),
        st.sampled_from(("a", "b")),
    ),
    max_size=40,
)


def _path(rows: list[tuple[int, int, str, str, str]]) -> tuple[StepPath, list[Segment]]:
    segs, t = [], 0
    for rank, dur, cause, detail, name in rows:
        segs.append(Segment(rank, t, t + dur, cause, detail, name))
        t += dur
    path = StepPath(1, 0, t, {0: t}, Segments.of(segs) if segs else None)
    return path, segs


@settings(max_examples=600, deadline=None, derandomize=True)
@given(segments, st.integers(0, 12))
def test_longest_segments_equal_the_stable_sort_by_duration(rows, k) -> None:
    path, segs = _path(rows)
    assert path.longest(k) == sorted(segs, key=lambda s: -s.duration_ns)[:k]


@settings(max_examples=600, deadline=None, derandomize=True)
@given(segments, st.sampled_from([1, 2**50 + 1]))
def test_totals_by_cause_equal_the_loop_in_first_segment_order(rows, scale) -> None:
    """Totals exact also where float sums would round (durations near 2**53)."""
    path, segs = _path([(r, d * scale, c, x, nm) for r, d, c, x, nm in rows])
    want: dict[tuple[str, str, int], int] = {}
    for s in segs:
        key = (s.cause, s.detail, s.rank if s.cause == "late_rank" else -1)
        want[key] = want.get(key, 0) + s.duration_ns
    got = path.by_cause()
    assert list(got.items()) == list(want.items())
