"""SIGHUP ends a capture like SIGTERM: the trace of the open window is written, and the process
still ends by the signal (``gpuscope run`` exits 128 + 1 = 129).

Before, only SIGTERM was handled: a SIGHUP (a closed terminal or SSH session, forwarded by
``gpuscope run``) killed the program with nothing written.  References: the steps the program
ran before the signal (they must all be in the trace) and the signal's number.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collectors.load import load_traces
from profiler import session as session_mod
from profiler.session import Session

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "examples" / "train_tiny.py")
GPUSCOPE = [sys.executable, "-m", "cli.main"]


@pytest.fixture(autouse=True)
def _signals_restored():
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    yield
    assert session_mod.current() is None, "a test left a capture session running"
    assert {s: signal.getsignal(s) for s in before} == before


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_the_signal_flushes_the_window_then_kills_by_that_signal(
    sig: signal.Signals, tmp_path: Path
) -> None:
    code = (
        "import os, signal, sys, profiler\n"
        "from profiler.session import Session\n"
        "s = Session('run', steps='1:100', nvml_hz=0, backend='host').start()\n"
        "for _ in range(3):\n"
        "    with profiler.region('r'):\n"
        "        pass\n"
        "    profiler.step()\n"
        f"os.kill(os.getpid(), {int(sig)})\n"
        "raise SystemExit('not reached')\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert r.returncode == -sig, r.stderr.decode()
    meta = json.loads((tmp_path / "run" / "ranks" / "rank-0.json").read_text())
    assert meta["stop_reason"] == sig.name
    (trace,) = load_traces([tmp_path / "run" / "traces"])
    assert list(trace.steps()["step"]) == [1, 2, 3]


def test_a_programs_own_handler_and_an_ignored_signal_are_left_alone(tmp_path: Path) -> None:
    def mine(signum: int, frame: object) -> None:
        pass

    prev = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGTERM, mine)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # e.g. under nohup
    try:
        s = Session(tmp_path / "run", steps="0:1", nvml_hz=0, backend="host").start()
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        s.stop()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        s = Session(tmp_path / "run2", steps="0:1", nvml_hz=0, backend="host").start()
        assert signal.getsignal(signal.SIGHUP) == s._on_signal
        s.stop()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL  # restored at stop
    finally:
        for sig, handler in prev.items():
            signal.signal(sig, handler)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_sighup_to_gpuscope_run_keeps_the_trace_and_exits_129(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [*GPUSCOPE, "run", "-o", str(run), "--steps", "1:1000", "--no-report", "--",
         sys.executable, EXAMPLE, "--steps", "100000", "--sleep", "0.05", "--hidden", "32"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        rank_meta = run / "ranks" / "rank-0.json"
        while time.monotonic() < deadline and proc.poll() is None:
            if rank_meta.exists() and json.loads(rank_meta.read_text())["steps_completed"] >= 1:
                break
            time.sleep(0.2)
        time.sleep(1.0)  # a few steps inside the (open) window
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGHUP, err
    meta = json.loads((run / "meta.json").read_text())
    assert meta["exit_code"] == 129
    (rank,) = meta["ranks"]
    assert rank["stop_reason"] == "SIGHUP"
    (trace,) = load_traces([run / "traces"])
    steps = list(trace.steps()["step"])
    assert len(steps) >= 2 and steps == list(range(1, len(steps) + 1))
    assert (run / "summary.json").exists()
