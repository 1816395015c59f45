"""The summary's JSON text is exactly what ``json.dumps(summary, indent=1, allow_nan=False)``
writes (the public interface's bytes did not change when it moved to the C encoder and
``msgspec.json.format``), on random JSON values and on every sample's summary."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.inputs import AnalysisInputs
from analyzers.options import AnalysisOptions
from collectors.load import load_traces
from reports.summary import build_summary
from reports.summary.assemble import summary_text
from tests.support.env import SAMPLES

KEYS = st.text(max_size=8) | st.sampled_from(
    ["", " ", "a: b", '{"x",', "é中\U0001f600", "\x00\n\t"]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=30,
)


def _reference(value: object) -> str:
    return json.dumps(value, indent=1, allow_nan=False) + "\n"


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_random_documents_are_written_as_json_dumps_indent_1_writes_them(doc: dict) -> None:
    assert summary_text(doc) == _reference(doc)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_nan_or_infinite_float_is_refused_as_before(value: float) -> None:
    with pytest.raises(ValueError):
        summary_text({"x": [value]})


@pytest.mark.parametrize("sample", ["synthetic_2rank", "torch_cpu"])
def test_a_samples_summary_is_written_as_before(sample: str) -> None:
    summary = build_summary(load_traces([SAMPLES / sample]), AnalysisOptions(), AnalysisInputs())
    assert summary_text(summary) == _reference(summary)
