"""With two CPUs and units large enough to use both here, the engine runs them in this process
(reports.summary.planning.here_on_two_cpus) and the summary equals the pool's."""

from __future__ import annotations

import pytest

from collectors.kineto import parallel as kineto_parallel
from reports.summary import planning
from reports.summary.engine import analyze_paths
from reports.summary.planning import Unit, here_on_two_cpus, plan_units
from tests.support.env import SAMPLES


@pytest.fixture
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kineto_parallel, "usable_cpus", lambda: 2)
    monkeypatch.delenv(kineto_parallel.ENV, raising=False)


def test_large_kineto_units_run_here_unless_workers_are_asked_for(
    two_cpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    units = plan_units([SAMPLES / "synthetic_2rank"])
    assert len(units) == 2
    assert not here_on_two_cpus(units, None, 2)  # small files: a pool of two pays
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES", 0)
    assert here_on_two_cpus(units, None, 2)
    assert not here_on_two_cpus(units, 2, 2)  # --workers 2
    assert not here_on_two_cpus(units, None, 3)  # more CPUs than one process uses
    nsys = Unit("nsys", (SAMPLES / "x.sqlite",))
    assert not here_on_two_cpus([*units, nsys], None, 2)
    monkeypatch.setattr(kineto_parallel, "usable_cpus", lambda: 1)
    assert not here_on_two_cpus(units, None, 2)


def test_the_summary_run_here_equals_the_pools(
    two_cpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pooled = analyze_paths([SAMPLES / "synthetic_2rank"], scheduler="processes", use_cache=False)
    monkeypatch.setattr(kineto_parallel, "MIN_TEXT_BYTES", 0)
    monkeypatch.setattr(planning, "available_memory_bytes", lambda: 64 << 30)
    here = analyze_paths([SAMPLES / "synthetic_2rank"], use_cache=False)
    assert pooled.scheduler == "processes" and here.scheduler == "in-process"
    assert here.summary == pooled.summary
