"""Fuzzing the JSON summary reader through ``gpuscope compare`` and ``gpuscope gate``
(docs/reliability.md).

Cases: a real summary (``analyze --json`` of the sample traces) with any value set to an odd
one (wrong type, NaN, infinities, integers beyond int64, negative durations), keys removed, or
bytes broken.  ``compare`` must exit 0 or 2 with one line naming the file; ``gate`` may also
exit 1 (a regression) or 3 (insufficient data with ``--strict``), never a traceback or an
internal error.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.cli_run import run_cli
from tests.support.env import SAMPLES
from tests.support.fuzzing import (
    OUTCOMES,
    byte_mutations,
    case_timeout,
    fuzz_settings,
    mutate_bytes,
    run_case,
    weird,
)

READER = "summary"
TRACES = [SAMPLES / "synthetic_2rank", SAMPLES / "torch_cpu" / "rank-0.json.gz"]


@functools.cache
def _summary(tmp: Path, i: int) -> bytes:
    out = tmp / f"base-{i}.json"
    res = run_cli(["analyze", TRACES[i], "--json", out, "--no-cache"])
    assert res.rc == 0, res.err
    return out.read_bytes()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside *value*."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            out += _paths(v, (*prefix, i))
    return out


def _compare_and_gate(d: Path, base: Path, broken: Path) -> None:
    run_case(READER, ["compare", base, broken, "--json", d / "c.json"], [broken], None)
    with case_timeout():
        res = run_cli(["gate", broken, "--baseline", base, "--strict", "--json", d / "g.json"])
    text = res.out + res.err
    assert "Traceback" not in text and "internal error" not in text, text
    assert res.rc in (0, 1, 2, 3), (res.rc, text)
    if res.rc == 2:
        assert len(res.err_lines) == 1 and str(broken) in res.err, res.err
    OUTCOMES["summary (gate)"]["cases"] += 1
    OUTCOMES["summary (gate)"][f"exit {res.rc}"] += 1


@fuzz_settings(40)
@given(data=st.data())
def test_a_summary_with_odd_values_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    i = data.draw(st.integers(0, len(TRACES) - 1), label="summary")
    raw = _summary(tmp_path_factory.getbasetemp(), i)
    doc = json.loads(raw)
    paths = _paths(doc)
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        path = data.draw(st.sampled_from(paths), label="path")
        parent = doc
        try:
            for k in path[:-1]:
                parent = parent[k]
            if data.draw(st.integers(0, 4)) == 0 and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = data.draw(weird(), label="value")
        except (KeyError, IndexError, TypeError):  # an earlier edit changed the shape
            continue
    d = tmp_path_factory.mktemp("sv")
    base, broken = d / "base.json", d / "broken.json"
    base.write_bytes(raw)
    broken.write_text(json.dumps(doc))
    _compare_and_gate(d, base, broken)


@fuzz_settings(20)
@given(i=st.integers(0, 1), mutations=byte_mutations())
def test_a_summary_with_broken_bytes_keeps_the_contract(
    tmp_path_factory: pytest.TempPathFactory, i: int, mutations: Any
) -> None:
    raw = _summary(tmp_path_factory.getbasetemp(), i)
    d = tmp_path_factory.mktemp("sb")
    base, broken = d / "base.json", d / "broken.json"
    base.write_bytes(raw)
    broken.write_bytes(mutate_bytes(raw, mutations))
    _compare_and_gate(d, base, broken)
