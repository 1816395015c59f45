"""Op-cost attribution follows the one launch-category set (collectors.model.LAUNCH_CATS): on an
MTIA trace, whose launches are ``mtia_runtime`` calls, ops own GPU work (before the categories
were unified, op attribution saw only ``cuda_runtime``/``cuda_driver`` and found none here,
while the launch statistics counted these calls)."""

from __future__ import annotations

import numpy as np

from analyzers.op_models import op_costs
from collectors.kineto import read_kineto
from collectors.linking import launching_calls
from tests.support.env import shared_path


def test_mtia_runtime_calls_launch_the_work_ops_own() -> None:
    trace = read_kineto(
        shared_path("kineto", "hta", "mtia_trace_single_rank", "mtia_rank_0.json.gz")
    )
    calls = launching_calls(trace.host, trace.gpu["correlation"].to_numpy())
    cats = set(trace.host["cat"].astype(str).to_numpy()[calls[calls >= 0]].tolist())
    assert cats == {"mtia_runtime"}
    costs = op_costs(trace)
    assert len(costs) > 0
    assert (costs["kernels"] > 0).all()
    owned = int(costs["kernels"].sum())
    assert owned <= int(np.count_nonzero(calls >= 0))  # no GPU row is counted twice
