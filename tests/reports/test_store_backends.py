"""The run-history store on SQLite and on a real PostgreSQL server (``support.stores``:
each test gets a fresh store; PostgreSQL skips locally without a server, fails under CI=true).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from sqlalchemy import event, text

from analyzers.gate.baseline import Baseline
from analyzers.gate.environment import Environment
from analyzers.gate.metrics import extract_metrics
from analyzers.gate.verdicts import decide
from collectors.errors import InputError, UsageError
from reports.store import open_store
from tests.support.summaries import kernel_row, make_summary

ENV_A = Environment(
    gpu_model="NVIDIA H100 80GB HBM3",
    gpu_count=8,
    nodes=1,
    driver="550.54",
    cuda="12.4",
    nccl="2.21.5",
    torch="2.13.0",
    gpuscope_version="0.1.0",
)
ENV_B = Environment(**{**ENV_A.as_dict(), "driver": "555.42", "extra": {}})


def _metrics(seed: int = 0, scale: float = 1.0) -> dict:
    rng = np.random.default_rng(seed)
    steps = [int(x) for x in rng.normal(100e6 * scale, 2e6, 30)]
    return extract_metrics(
        make_summary(
            [steps, steps[::-1]],
            exposed=[[1_000_000 + i for i in range(30)]] * 2,
            idle_pct=[4.0, 5.5],
            overlap_pct=[70.0, 65.0],
            kernels=[[kernel_row("gemm", rng.normal(50_000, 900, 100))]] * 2,
        )
    )


def test_a_recorded_run_comes_back_exactly(store_url: str) -> None:
    m = _metrics()
    with open_store(store_url) as st:
        run_id = st.record(m, name="llama", env=ENV_A, branch="main", commit="abc")
        got = st.baseline("llama", "main", ENV_A, 10)
    assert got.run_ids == (run_id,) and got.commits == ("abc",)
    (back,) = got.runs
    assert back.keys() == m.keys()
    for key, mv in m.items():
        assert back[key].value == mv.value
        assert back[key].samples == mv.samples  # step times: exact integers as float64
        assert back[key].stats == mv.stats
        assert back[key].rank_by == mv.rank_by
    assert got.segment_env == ENV_A


def test_baseline_is_the_newest_k_runs_of_the_latest_segment(store_url: str) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    with open_store(store_url) as st:
        ids_a = [
            st.record(
                _metrics(i),
                name="b",
                env=ENV_A,
                branch="main",
                commit=f"a{i}",
                recorded_at=t0 + timedelta(hours=i),
            )
            for i in range(3)
        ]
        ids_b = [
            st.record(
                _metrics(i),
                name="b",
                env=ENV_B,
                branch="main",
                commit=f"b{i}",
                recorded_at=t0 + timedelta(hours=10 + i),
            )
            for i in range(12)
        ]
        st.record(_metrics(), name="b", env=ENV_B, branch="feature", commit="f")
        st.record(_metrics(), name="other", env=ENV_B, branch="main", commit="o")
        got = st.baseline("b", "main", ENV_B, 10)
        assert got.run_ids == tuple(reversed(ids_b))[:10]
        # the old environment is no longer the latest segment: nothing to compare with
        old = st.baseline("b", "main", ENV_A, 10)
        assert old.runs == () and old.mismatch == ("driver: 550.54 → 555.42",)
        assert st.baseline("b", "nope", ENV_B, 10).segment_env is None
        assert ids_a  # recorded, only superseded
        # a new environment after B starts again from nothing
        st.record(
            _metrics(),
            name="b",
            env=ENV_A,
            branch="main",
            commit="a9",
            recorded_at=t0 + timedelta(hours=30),
        )
        assert len(st.baseline("b", "main", ENV_A, 10).runs) == 1


def test_a_failed_write_leaves_nothing_behind(store_url: str) -> None:
    with open_store(store_url) as st:
        st.record(_metrics(), name="b", env=ENV_A, branch="main")

        def fail_on_samples(conn, cursor, statement, *args) -> None:
            if statement.lstrip().upper().startswith("INSERT INTO SAMPLE"):
                raise RuntimeError("disk full (simulated)")

        event.listen(st.engine, "before_cursor_execute", fail_on_samples)
        with pytest.raises(RuntimeError, match="simulated"):
            st.record(_metrics(1), name="b", env=ENV_B, branch="main", commit="half")
        event.remove(st.engine, "before_cursor_execute", fail_on_samples)
        with st.engine.connect() as c:
            counts = {
                t: c.execute(text(f"select count(*) from {t}")).scalar_one()
                for t in ("run", "testbed", "measurement", "sample")
            }
    n = len(_metrics())
    assert counts == {
        "run": 1,
        "testbed": 1,
        "measurement": n,
        "sample": sum(len(v.samples) for v in _metrics().values()),
    }


def test_migrated_schema_matches_the_models(store_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from reports.store_models import Base

    with open_store(store_url) as st, st.engine.begin() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_a_store_from_a_newer_gpuscope_is_refused(store_url: str) -> None:
    open_store(store_url).close()
    st = open_store(store_url)
    with st.engine.begin() as c:
        c.execute(text("update alembic_version set version_num = '9999'"))
    st.close()
    with pytest.raises(InputError, match="newer than this gpuscope"):
        open_store(store_url)


def test_history_and_verdicts_read_back(store_url: str) -> None:
    with open_store(store_url) as st:
        for i in range(6):
            st.record(_metrics(i), name="llama", env=ENV_A, branch="main", commit=f"c{i}")
        base = st.baseline("llama", "main", ENV_A, 10)
        result = decide(_metrics(9, 1.08), Baseline("store", base.runs, base.run_ids))
        st.save_verdicts(result, name="llama", branch="main", commit="pr1")
        hist = st.history(name="llama", metric="kernel_time_ns")
        steps = st.history(metric="step_time_ns")
        verdicts = st.verdicts("llama")
    assert set(hist["key"]) == {"kernel_time_ns[gemm]"} and len(hist) == 6
    assert steps["commit_sha"].tolist() == [f"c{i}" for i in range(6)]
    assert steps["value"].tolist() == [_metrics(i)["step_time_ns"].value for i in range(6)]
    assert (verdicts["commit_sha"] == "pr1").all()
    assert dict(zip(verdicts["key"], verdicts["status"], strict=True))["step_time_ns"] == "fail"


def test_unreachable_server_is_an_input_error_without_the_password() -> None:
    with pytest.raises(InputError, match="cannot open the store") as err:
        open_store("postgresql+psycopg://gate:s3cret@127.0.0.1:1/perf")
    assert "s3cret" not in str(err.value) and "***" in str(err.value)


def test_a_file_that_is_not_a_database_is_an_input_error(tmp_path) -> None:
    p = tmp_path / "notes.db"
    p.write_text("hello, this is not SQLite\n" * 100)
    with pytest.raises(InputError, match="cannot open the store"):
        open_store(str(p))


def test_unsupported_or_malformed_urls_are_usage_errors(tmp_path) -> None:
    with pytest.raises(UsageError, match="unsupported database 'mysql'"):
        open_store("mysql://u@localhost/db")
    with pytest.raises(InputError, match="folder of the SQLite store does not exist"):
        open_store(str(tmp_path / "missing" / "h.db"))


def test_sqlite_store_runs_in_wal_mode(tmp_path) -> None:
    with open_store(str(tmp_path / "h.db")) as st, st.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar_one() >= 30_000
