"""The op groups aggregated from the key columns' codes (:func:`analyzers.op_models.op_groups`)
equal the ``groupby`` aggregation they replaced, exactly (values, dtypes, order), on the
shared traces with input shapes and on generated costs with repeated keys, estimates whose
first note is not the group's first call's, and missing notes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyzers.op_models import op_costs, op_groups
from analyzers.op_models.attribution import (
    GPU_TIME,
    OP_COST_COLUMNS,
    OP_GROUP_KEYS,
    _groups_by_codes,
    groups_by_groupby,
)
from tests.support.env import shared_path


def _groupby_groups(costs: pd.DataFrame) -> pd.DataFrame:
    """The replaced aggregation (kept as the path without key codes)."""
    out = groups_by_groupby(costs)
    out.attrs[GPU_TIME] = costs.attrs.get(GPU_TIME)
    return out


def _generated(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)

    def pick(values: list, dtype: str = "str") -> pd.Series:
        return pd.Series(
            np.array(values, dtype=object)[rng.integers(0, len(values), n)], dtype=dtype
        )

    costs = pd.DataFrame(
        {
            "host_row": np.arange(n),
            "op": pick(["aten::mm", "aten::add", "aten::conv2d"]),
            "input_dims": pick(["[[2,3],[3,4]]", "[[4]]", ""]),
            "input_types": pick(['["float","float"]', '["c10::Half"]']),
            "concrete_inputs": pick(["", '["", "1"]']),
            "kind": pick(["gemm", "elementwise"]),
            "precision": pick(["fp32", "fp16_tensor", "tf32_tensor"]),
            "exact": rng.random(n) < 0.7,
            "note": pick(["", "", "no Concrete Inputs", "strides assumed", np.nan]),
            "flops": rng.integers(0, 10**12, n),
            "bytes": rng.integers(0, 10**9, n),
            "kernels": rng.integers(1, 4, n),
            "kernel_time_ns": rng.integers(0, 10**6, n),
            "host_copy": rng.random(n) < 0.1,
        },
        columns=list(OP_COST_COLUMNS),
    )
    costs.attrs[GPU_TIME] = 123
    return costs


@pytest.mark.parametrize("seed", range(3))
def test_generated_costs(seed: int) -> None:
    costs = _generated(5_000, seed)
    pd.testing.assert_frame_equal(op_groups(costs), _groupby_groups(costs), check_exact=True)
    assert op_groups(costs).attrs == {GPU_TIME: 123}


def test_costs_a_groupby_has_to_aggregate() -> None:
    costs = _generated(500, 7)
    costs.loc[3, "precision"] = None  # a missing key: groupby leaves the call out
    pd.testing.assert_frame_equal(op_groups(costs), _groupby_groups(costs), check_exact=True)
    costs = _generated(500, 8).astype({"flops": object})
    costs.loc[5, "flops"] = 10**30  # beyond int64: summed as Python ints
    pd.testing.assert_frame_equal(op_groups(costs), _groupby_groups(costs), check_exact=True)


REAL = [
    ("hta", "trace_filter", "sampled_rank-0.json.gz"),
    ("hta", "negative_queue_length_values_check", "rank0.json.gz"),
    ("tracelens", "mi300", "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
    ("tracelens", "mi300", "google_owlv2-large-patch14-ensemble__1016001.json.gz"),
    ("tracelens", "perf_model", "normalization", "normalization_layer_test.json.gz"),
]


@pytest.mark.parametrize("parts", REAL, ids=[p[-1] for p in REAL])
def test_shared_traces(parts: tuple[str, ...]) -> None:
    from collectors.load import load_traces

    (t,) = load_traces([shared_path("kineto", *parts)])
    costs = op_costs(t)
    assert len(costs)
    assert _groups_by_codes(costs, list(OP_GROUP_KEYS)) is not None  # the path under test
    pd.testing.assert_frame_equal(op_groups(costs), _groupby_groups(costs), check_exact=True)
