"""The ``profiler`` Python API in-process: profile / region / step / Session.

References: the step and region times the session measured itself (``ranks/rank-0.json``) must
reappear, to the nanosecond, in the trace the Kineto reader reads back; window contents are
checked against the steps the test ran.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import profiler
from collectors.load import load_traces
from profiler import regions
from profiler import session as session_mod
from profiler.config import CaptureConfig, StepWindow, parse_steps
from profiler.session import Session

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_session_left(monkeypatch):
    for var in ("GPUSCOPE_RUN_DIR", "GPUSCOPE_STEPS", "GPUSCOPE_CAPTURE_PID", "GPUSCOPE_AUTO"):
        monkeypatch.delenv(var, raising=False)
    handler = signal.getsignal(signal.SIGTERM)
    yield
    leftover = session_mod.current()
    if leftover is not None:
        leftover.stop()
    assert leftover is None, "a test left a capture session running"
    assert regions._recorder is None
    assert signal.getsignal(signal.SIGTERM) == handler


def _meta(run: Path, rank: int = 0) -> dict:
    return json.loads((run / "ranks" / f"rank-{rank}.json").read_text())


def test_step_window_parsing_and_torch_schedule() -> None:
    w = parse_steps("5:10")
    assert (w.start, w.stop) == (5, 10) and 5 in w and 9 in w and 10 not in w
    assert w.torch_schedule_args() == {
        "skip_first": 0, "wait": 4, "warmup": 1, "active": 5, "repeat": 1,
    }  # fmt: skip
    assert StepWindow(0, 2).torch_schedule_args()["warmup"] == 0
    for bad in ("5", "a:b", "3:3", "-1:2", "4:2"):
        with pytest.raises(ValueError):
            parse_steps(bad)


def test_env_config_is_what_gpuscope_run_sets() -> None:
    assert CaptureConfig.from_env({}) is None
    cfg = CaptureConfig.from_env(
        {"GPUSCOPE_RUN_DIR": "/r", "GPUSCOPE_STEPS": "2:4", "GPUSCOPE_NVML_HZ": "0"}
    )
    assert cfg is not None and cfg.out_dir == "/r" and cfg.steps == StepWindow(2, 4)
    assert cfg.nvml_hz == 0 and cfg.under_run
    bad = CaptureConfig.from_env({"GPUSCOPE_RUN_DIR": "/r", "GPUSCOPE_STEPS": "x"})
    assert bad is not None and bad.steps == StepWindow(5, 10)  # never fails the program


def test_host_backend_trace_has_the_measured_steps_and_regions_exactly(tmp_path: Path) -> None:
    run = tmp_path / "run"
    s = Session(run, steps="1:3", nvml_hz=0, backend="host").start()
    for _ in range(4):
        with profiler.region("forward"), profiler.region("inner"):
            pass
        profiler.step()
    s.stop()
    meta = _meta(run)
    assert meta["backend"] == "host" and meta["steps_completed"] == 4
    assert meta["regions"]["forward"]["count"] == 4 and meta["regions"]["inner"]["count"] == 4
    r = meta["regions"]["forward"]
    assert r["min_ns"] <= r["total_ns"] / 4 <= r["max_ns"]
    (trace,) = load_traces([run / "traces"])
    steps = trace.steps()
    assert list(steps["step"]) == [1, 2]
    # the trace's step durations are the session's own measurements, to the nanosecond
    assert list(steps["end_ns"] - steps["start_ns"]) == meta["step_times_ns"][1:3]
    user = trace.annotations[trace.annotations["kind"] == "user"]
    assert sorted(user["name"].astype(str)) == ["forward", "forward", "inner", "inner"]
    assert meta["steps_captured"] == [1, 2]
    assert meta["nvml"] == {"available": False, "reason": "disabled (--nvml-hz 0)"}


def test_profile_works_bare_with_arguments_and_as_context_manager(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)

    @profiler.profile
    def bare() -> int:
        profiler.step()
        return 7

    assert bare() == 7
    (default_run,) = (tmp_path / "runs").iterdir()
    assert (default_run / "ranks" / "rank-0.json").exists()
    assert (default_run / "meta.json").exists()

    @profiler.profile(out=str(tmp_path / "a"), steps="0:1", nvml_hz=0, backend="host")
    def with_args() -> None:
        with profiler.region("r"):
            pass
        profiler.step()

    with_args()
    assert (tmp_path / "a" / "traces" / "rank-0.pt.trace.json.gz").exists()

    with profiler.profile(out=str(tmp_path / "b"), nvml_hz=0, backend="host") as s:
        assert s is profiler.current_session() and s.active
        s.step()
    assert not s.active and profiler.current_session() is None
    assert _meta(tmp_path / "b")["stop_reason"] == "context exit"


def test_profile_misuse_says_how_to_call_it() -> None:
    with pytest.raises(TypeError, match="keyword arguments only"):
        profiler.profile("runs/x")
    with pytest.raises(ValueError, match="A:B"):
        profiler.profile(steps="10")


def test_step_and_region_without_a_session_do_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    profiler.step()
    with profiler.region("x"):
        pass

    @profiler.region("decorated")
    def f(a: int) -> int:
        return a + 1

    assert f(1) == 2
    assert list(tmp_path.iterdir()) == []


def test_decorated_region_counts_calls_made_after_the_session_started(tmp_path: Path) -> None:
    @profiler.region("work")
    def work() -> None:
        pass

    work()  # before any session: not counted
    with profiler.profile(out=str(tmp_path / "r"), nvml_hz=0, backend="host") as s:
        work()
        work()
        s.step()
    assert _meta(tmp_path / "r")["regions"]["work"]["count"] == 2


def test_optimizer_hook_and_explicit_step_mark_each_boundary_once(tmp_path: Path) -> None:
    s = Session(tmp_path / "r", nvml_hz=0, backend="host").start()
    s.auto_step()  # iteration 0: optimizer.step() hook ...
    s.step()  # ... then the program's own profiler.step(): the same boundary
    s.auto_step()  # from now on the hook is ignored
    s.step()
    s.stop()
    meta = _meta(tmp_path / "r")
    assert meta["steps_completed"] == 2 and meta["step_source"] == "api"


def test_unwritable_run_directory_degrades_without_raising(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    s = Session(blocker / "run", nvml_hz=0, backend="host").start()
    with profiler.region("r"):
        pass
    s.step()
    s.stop()
    assert any("run directory" in e for e in s.errors)
    assert "capture degraded" in capsys.readouterr().err


def test_torch_backend_records_only_the_window(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    run = tmp_path / "run"
    s = Session(run, steps="2:4", nvml_hz=0, backend="torch").start()
    assert s.backend == "torch"
    x = torch.ones(8, 8)
    for k in range(6):
        with profiler.region(f"region_step_{k}"):
            x = x @ x / 8
        profiler.step()
    s.stop()
    (trace,) = load_traces([run / "traces"])
    assert list(trace.steps()["step"]) == [2, 3]
    user = set(trace.annotations[trace.annotations["kind"] == "user"]["name"].astype(str))
    assert {"region_step_2", "region_step_3"} <= user
    assert not user & {"region_step_0", "region_step_1", "region_step_4", "region_step_5"}
    assert (trace.host["cat"] == "cpu_op").any()
    meta = _meta(run)
    assert meta["steps_captured"] == [2, 3] and meta["torch_activities"] == ["cpu"]
    assert meta["regions"]["region_step_5"]["count"] == 1  # host timings cover every step


def test_torch_trace_of_an_open_window_is_saved_at_stop(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    run = tmp_path / "run"
    s = Session(run, steps="1:100", nvml_hz=0, backend="torch").start()
    for _ in range(3):
        torch.ones(4).sum()
        profiler.step()
    s.stop("SIGTERM")
    (trace,) = load_traces([run / "traces"])
    assert list(trace.steps()["step"]) == [1, 2, 3]  # step 3 was running at stop
    assert _meta(run)["stop_reason"] == "SIGTERM"


def test_disabled_makes_every_call_a_no_op(tmp_path: Path) -> None:
    code = (
        "import profiler, os\n"
        "from profiler.regions import NO_REGION\n"
        "assert profiler.region('x') is NO_REGION\n"
        "@profiler.profile(out='run')\n"
        "def f():\n"
        "    profiler.step()\n"
        "    return 1\n"
        "assert f() == 1\n"
        "with profiler.profile(out='run2') as s:\n"
        "    assert not s.active\n"
        "assert profiler.current_session() is None\n"
        "assert not os.path.exists('run') and not os.path.exists('run2')\n"
    )
    env = {**os.environ, "GPUSCOPE_DISABLE": "1", "GPUSCOPE_RUN_DIR": str(tmp_path / "r")}
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, timeout=120
    )
    assert r.returncode == 0, r.stderr.decode()
    assert not (tmp_path / "r").exists()


def test_importing_profiler_is_light() -> None:
    code = (
        "import sys, profiler\n"
        "heavy = {'torch', 'numpy', 'pandas', 'pynvml', 'nvtx'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, cwd=REPO)
    assert r.returncode == 0, r.stderr.decode()


def test_sigterm_flushes_the_window_then_dies_by_the_signal(tmp_path: Path) -> None:
    code = (
        "import os, signal, profiler\n"
        "from profiler.session import Session\n"
        "s = Session('run', steps='1:100', nvml_hz=0, backend='host').start()\n"
        "for _ in range(3):\n"
        "    with profiler.region('r'):\n"
        "        pass\n"
        "    profiler.step()\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "raise SystemExit('not reached')\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert r.returncode == -signal.SIGTERM, r.stderr.decode()
    meta = _meta(tmp_path / "run")
    assert meta["stop_reason"] == "SIGTERM"
    (trace,) = load_traces([tmp_path / "run" / "traces"])
    assert list(trace.steps()["step"]) == [1, 2, 3]


def test_a_forked_child_exiting_leaves_the_parents_capture_alone(tmp_path: Path) -> None:
    run = tmp_path / "run"
    s = Session(run, steps="0:100", nvml_hz=0, backend="host").start()
    profiler.step()
    before = (run / "ranks" / "rank-0.json").read_text()
    pid = os.fork()
    if pid == 0:  # the child: what a data-loader worker's exit would do
        try:
            s.stop()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert (run / "ranks" / "rank-0.json").read_text() == before
    assert not (run / "traces").exists()
    profiler.step()
    s.stop()
    assert _meta(run)["steps_completed"] == 2


def test_under_gpuscope_run_profile_reuses_the_run_session_and_its_steps(
    tmp_path: Path, monkeypatch
) -> None:
    run = tmp_path / "run"
    monkeypatch.setenv("GPUSCOPE_RUN_DIR", str(run))
    monkeypatch.setenv("GPUSCOPE_NVML_HZ", "0")
    monkeypatch.setenv("GPUSCOPE_BACKEND", "host")
    monkeypatch.setenv("GPUSCOPE_CAPTURE_PID", "")  # restored (removed) after the test
    with profiler.profile(out=str(tmp_path / "ignored"), steps="1:2") as s:
        assert s.out_dir == run and str(s.window) == "1:2"  # the program's window applies
        assert not run.exists()  # nothing is written before the first step
        for _ in range(3):
            profiler.step()
    assert s.active  # the run's session outlives the block: gpuscope run's process exit ends it
    s.stop()
    assert not (tmp_path / "ignored").exists()
    (trace,) = load_traces([run / "traces"])
    assert list(trace.steps()["step"]) == [1]
    assert os.environ["GPUSCOPE_CAPTURE_PID"] == str(os.getpid())
