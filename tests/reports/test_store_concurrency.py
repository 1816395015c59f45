"""Eight processes writing to one store at once lose no run (SQLite file and PostgreSQL).

The processes start together on a fresh store, so the schema migration races too.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from reports.store import open_store

WORKERS = 8
RUNS_PER_WORKER = 5

WORKER = r"""
import sys, time
from pathlib import Path
import numpy as np
from analyzers.gate.environment import Environment
from analyzers.gate.metrics import MetricValue
from analyzers.stats import median
from reports.store import open_store

url, worker, runs, gate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
rng = np.random.default_rng(worker)
summaries = []
for j in range(runs):
    steps = tuple(float(int(x)) for x in rng.normal(1e8, 2e6, 30))
    m = MetricValue("step_time_ns", "step_time_ns", median(steps), steps)
    summaries.append({m.key: m})
env = Environment(gpu_model="H100", gpu_count=8, extra={"worker": str(worker % 2)})
(gate.parent / f"ready-{worker}").touch()
while not gate.exists():
    time.sleep(0.01)
with open_store(url) as st:
    for j, m in enumerate(summaries):
        st.record(m, name="conc", env=env, branch="main", commit=f"w{worker}-r{j}")
"""


@pytest.mark.slow
def test_eight_concurrent_writers_lose_no_run(store_url: str, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    repo = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, store_url, str(w), str(RUNS_PER_WORKER), str(gate)],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    deadline = time.monotonic() + 300
    while len(list(tmp_path.glob("ready-*"))) < WORKERS:
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        assert time.monotonic() < deadline, "workers did not start"
        time.sleep(0.05)
    gate.touch()
    outcomes = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    failed = {w: err[-2000:] for w, (rc, err) in enumerate(outcomes) if rc != 0}
    assert not failed, failed

    with open_store(store_url) as st, st.engine.connect() as c:
        commits = c.execute(text("select commit_sha from run where name = 'conc'")).scalars().all()
        testbeds = c.execute(text("select count(*) from testbed")).scalar_one()
        samples = c.execute(text("select count(*) from sample")).scalar_one()
    expected = {f"w{w}-r{j}" for w in range(WORKERS) for j in range(RUNS_PER_WORKER)}
    assert sorted(commits) == sorted(expected)  # every run once, none lost or duplicated
    assert testbeds == 2  # two environments, each inserted once despite the race
    assert samples == WORKERS * RUNS_PER_WORKER * 30


def test_open_waits_for_a_writer_holding_a_fresh_sqlite_file(tmp_path: Path) -> None:
    # A fresh file is in rollback-journal mode; while another connection holds its write lock,
    # SQLite refuses the switch to WAL at once ("database is locked", no busy wait) -- the race
    # eight processes opening a new store together can hit.  Opening must wait it out instead.
    path = tmp_path / "history.db"
    holder = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    holder.execute("CREATE TABLE other (x INTEGER)")
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, holder.execute, ("COMMIT",))
    release.start()
    try:
        with open_store(str(path)) as st, st.engine.connect() as c:
            mode = c.exec_driver_sql("PRAGMA journal_mode").scalar_one()
    finally:
        release.join()
        holder.close()
    assert mode == "wal"
