"""The host columns ``concrete_inputs`` and ``input_strides`` (Kineto ``Concrete Inputs`` /
``Input Strides``) against the raw JSON read with the plain ``json`` module."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from collectors.kineto import read_kineto
from tests.support.env import shared_path
from tests.support.raw_kineto import trace_events

ARGS = {"concrete_inputs": "Concrete Inputs", "input_strides": "Input Strides"}


def _raw_host_args(path: Path, key: str) -> Counter[str]:
    """Compact JSON of *key* over the host activities (ph X, not GPU rows) that carry it."""
    events = trace_events(path)
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
    return Counter(
        json.dumps(e["args"][key], separators=(",", ":"))
        for e in events
        if e.get("ph") == "X" and e.get("cat") not in gpu_cats and key in (e.get("args") or {})
    )


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_concrete_inputs_and_strides_are_kept_as_compact_json(parallel: bool) -> None:
    path = shared_path(
        "kineto", "tracelens", "mi300", "Falconsai_nsfw_image_detection__1016002.json.gz"
    )
    trace = read_kineto(path, parallel=parallel)
    for column, key in ARGS.items():
        raw = _raw_host_args(path, key)
        assert sum(raw.values()) > 1000
        assert Counter(trace.host[column].dropna()) == raw
    conv = trace.host[trace.host["name"] == "aten::conv2d"].iloc[0]
    assert json.loads(conv["concrete_inputs"]) == ["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "1"]
    assert json.loads(conv["input_strides"])[:2] == [[150528, 50176, 224, 1], [768, 256, 16, 1]]


def test_traces_without_the_arguments_give_none() -> None:
    path = shared_path("kineto", "hta", "trace_filter", "sampled_rank-0.json.gz")
    assert sum(_raw_host_args(path, "Concrete Inputs").values()) == 0
    trace = read_kineto(path)
    assert trace.host["input_dims"].notna().any()
    for column in ARGS:
        assert trace.host[column].isna().all()
