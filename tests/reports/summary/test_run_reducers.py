"""Run sections from per-rank digests equal the sections run on whole Traces.

``build_summary`` and the worker pool both compute run sections through the reducers of
:data:`reports.summary.many_ranks.RUN_REDUCERS`; the reference here is each section function
called directly on every Trace, as it was computed before the reducers existed.
"""

from __future__ import annotations

import pytest

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.load import load_traces
from collectors.model import Trace
from reports.summary.many_ranks import RUN_REDUCERS, rank_digest, run_sections
from reports.summary.registry import RUN_SECTIONS
from tests.support.env import SAMPLES


@pytest.fixture(scope="module")
def eight_ranks() -> list[Trace]:
    return load_traces([SAMPLES / "synthetic_8rank"])


def _direct(traces: list[Trace], options: AnalysisOptions) -> dict[str, object]:
    inputs = AnalysisInputs()
    values = {key: fn(traces, options, inputs) for key, fn in RUN_SECTIONS}
    return {k: v for k, v in values.items() if v is not None}


@pytest.mark.parametrize("all_events", [False, True], ids=["window", "all_events"])
def test_reducers_give_the_sections_of_whole_traces(
    eight_ranks: list[Trace], all_events: bool
) -> None:
    options = AnalysisOptions(all_events=all_events)
    inputs = AnalysisInputs()
    digests = [rank_digest(t, options, inputs) for t in eight_ranks]
    notes: list[str] = []
    got = run_sections(digests, options, inputs, lambda: pytest.fail("no reload"), notes)
    want = _direct(eight_ranks, options)
    skew = want["comm_skew"]
    assert isinstance(skew, dict) and skew["matched"] > 0
    assert got == want
    assert not notes


def test_a_section_without_reducer_is_computed_from_whole_traces_once(
    eight_ranks: list[Trace], monkeypatch: pytest.MonkeyPatch
) -> None:
    options = AnalysisOptions()
    inputs = AnalysisInputs()
    digests = [rank_digest(t, options, inputs) for t in eight_ranks]
    monkeypatch.delitem(RUN_REDUCERS, "comm_skew")
    reloads: list[int] = []

    def whole() -> list[Trace]:
        reloads.append(1)
        return eight_ranks

    notes: list[str] = []
    got = run_sections(digests, options, inputs, whole, notes)
    assert got == _direct(eight_ranks, options)
    assert reloads == [1]
    assert len(notes) == 1 and "'comm_skew' has no reducer" in notes[0]


def test_one_rank_gives_no_skew_and_its_own_run_section() -> None:
    (t,) = load_traces([SAMPLES / "synthetic_2rank" / "rank-0.json.gz"])
    options = AnalysisOptions()
    got = run_sections([rank_digest(t, options, AnalysisInputs())], options, AnalysisInputs(), list)
    assert "comm_skew" not in got
    assert got == _direct([t], options)
