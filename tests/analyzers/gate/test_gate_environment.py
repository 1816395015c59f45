"""The environment fingerprint of a summary (analyzers/gate/environment.py, docs/gating.md §5)."""

from __future__ import annotations

import pytest

from analyzers.gate.environment import environment_from_summary
from collectors.errors import UsageError
from tests.support.summaries import make_summary


def test_environment_from_summary_and_overrides() -> None:
    # hostnames are where the writer puts them: the run section's ranks
    hosts = [{"rank": 0, "hostname": "n1"}, {"rank": 1, "hostname": "n2"}]
    s = make_summary([[1], [1]], device="NVIDIA H200", run={"ranks": hosts})
    env = environment_from_summary(s)
    assert (env.gpu_model, env.gpu_count, env.nodes, env.gpuscope_version) == (
        "NVIDIA H200",
        2,
        2,
        "0.1.0",
    )
    s["environment"] = {"driver": "550.54", "cuda": "12.4", "gpu_count": 16, "nodes": 2}
    env2 = environment_from_summary(s, {"NCCL_ALGO": "Ring", "torch": "2.13.0"})
    assert (env2.driver, env2.cuda, env2.gpu_count, env2.torch) == ("550.54", "12.4", 16, "2.13.0")
    assert env2.extra == {"NCCL_ALGO": "Ring"}
    assert env2.fingerprint != env.fingerprint
    assert (
        env2.fingerprint
        == environment_from_summary(s, {"torch": "2.13.0", "NCCL_ALGO": "Ring"}).fingerprint
    )
    with pytest.raises(UsageError, match="gpu_count must be an integer"):
        environment_from_summary(s, {"gpu_count": "eight"})


def test_nodes_count_the_run_sections_distinct_hostnames() -> None:
    hosts = [{"rank": r, "hostname": f"n{r // 4}"} for r in range(8)]
    s = make_summary([[1]] * 8, run={"ranks": hosts})
    assert environment_from_summary(s).nodes == 2
    s["run"]["ranks"] = [{**h, "hostname": None} for h in hosts]
    assert environment_from_summary(s).nodes is None  # unknown, not 0
    assert environment_from_summary(make_summary([[1]])).nodes is None  # no run section
