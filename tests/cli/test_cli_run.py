"""``gpuscope run -- CMD`` end to end, in subprocesses (bounded by timeouts; CPU only).

References: the example's own step count and window (what must be in the trace), the exit
status the child was told to return, and the files the run-directory layout promises.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from collectors.load import load_traces

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "examples" / "train_tiny.py")
GPUSCOPE = [sys.executable, "-m", "cli.main"]
HAVE_REPORT = importlib.util.find_spec("reports.html") is not None

pytestmark = pytest.mark.slow


def gpuscope(args: list[str], timeout: float = 300, **kw) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **kw.pop("env", {})}
    return subprocess.run(
        [*GPUSCOPE, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env,
        **kw,
    )  # fmt: skip


def _meta(run: Path) -> dict:
    return json.loads((run / "meta.json").read_text())


def _has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


needs_torch = pytest.mark.skipif(not _has_torch(), reason="torch is not installed")


@needs_torch
def test_example_on_cpu_gives_trace_regions_summary_and_unavailable_nvml(tmp_path: Path) -> None:
    run = tmp_path / "run"
    r = gpuscope(["run", "-o", str(run), "--steps", "2:4", "--", sys.executable, EXAMPLE,
                  "--steps", "6", "--hidden", "64"])  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "step_time_ms median=" in r.stdout  # the program's own output passes through
    assert f"run directory  {run}" in r.stderr and "summary" in r.stderr
    meta = _meta(run)
    assert meta["exit_code"] == 0 and meta["command"][-4:] == ["--steps", "6", "--hidden", "64"]
    (rank,) = meta["ranks"]
    assert rank["backend"] == "torch" and rank["steps_captured"] == [2, 3]
    assert rank["steps_completed"] == 6 and rank["step_source"] == "api"
    assert set(rank["regions"]) == {"data", "forward", "backward", "optimizer"}
    assert rank["regions"]["forward"]["count"] == 6
    nvml = meta["nvml"][rank["host"]]
    assert nvml["available"] is False and nvml["reason"]
    (trace,) = load_traces([run / "traces"])
    assert (trace.host["cat"] == "cpu_op").sum() > 10
    assert list(trace.steps()["step"]) == [2, 3]
    user = trace.annotations[trace.annotations["kind"] == "user"]["name"].astype(str)
    assert {"data", "forward", "backward", "optimizer"} <= set(user)
    summary = json.loads((run / "summary.json").read_text())
    assert [x["rank"] for x in summary["ranks"]] == [0]
    if "run" in summary:  # the summary's run section reads meta.json, written before it
        assert summary["run"]["meta"]["exit_code"] == 0
    assert meta["files"]["summary"] == "summary.json"
    assert meta["files"]["traces"] == ["traces/rank-0.pt.trace.json.gz"]
    if HAVE_REPORT:
        assert (run / "report.html").exists()
    else:
        assert any("HTML report skipped" in n for n in meta["notes"])


@needs_torch
def test_torchrun_with_two_gloo_ranks_gives_two_traces(tmp_path: Path) -> None:
    run = tmp_path / "run"
    r = gpuscope(
        ["run", "-o", str(run), "--steps", "1:3", "--nvml-hz", "5", "--no-report", "--",
         sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         EXAMPLE, "--steps", "4", "--hidden", "32"],
        timeout=400,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    meta = _meta(run)
    assert [x["rank"] for x in meta["ranks"]] == [0, 1]
    assert meta["world_size"] == 2
    assert [x["local_rank"] for x in meta["ranks"]] == [0, 1]
    assert len(meta["nvml"]) == 1  # one sampler per node: local rank 0 only
    traces = load_traces([run / "traces"])
    assert [t.rank for t in traces] == [0, 1]
    for t in traces:
        assert list(t.steps()["step"]) == [1, 2]  # the same steps on every rank
        assert (t.host["cat"] == "cpu_op").any()
    assert len(json.loads((run / "summary.json").read_text())["ranks"]) == 2
    assert not (run / "report.html").exists()


def test_child_exit_status_is_gpuscopes_exit_status(tmp_path: Path) -> None:
    run = tmp_path / "run"
    r = gpuscope(["run", "-o", str(run), "--", sys.executable, "-c", "import sys; sys.exit(3)"])
    assert r.returncode == 3, r.stderr
    meta = _meta(run)
    assert meta["exit_code"] == 3 and meta["ranks"] == []
    assert any("no trace captured" in n for n in meta["notes"])


def test_the_wrapped_program_keeps_its_environment(tmp_path: Path) -> None:
    """The analysis commands' memory settings (cli.memory_settings) never reach the program
    that ``gpuscope run`` wraps."""
    code = "import os, sys; sys.exit(5 if 'NUMPY_MADVISE_HUGEPAGE' in os.environ else 4)"
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    r = subprocess.run(
        [*GPUSCOPE, "run", "-o", str(tmp_path / "run"), "--", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip
    assert r.returncode == 4, r.stderr


def test_child_killed_by_a_signal_exits_128_plus_n(tmp_path: Path) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    r = gpuscope(["run", "-o", str(tmp_path / "run"), "--", sys.executable, "-c", code])
    assert r.returncode == 128 + signal.SIGTERM


@needs_torch
def test_sigint_leaves_a_run_directory_with_what_was_captured(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [*GPUSCOPE, "run", "-o", str(run), "--steps", "1:1000", "--no-report", "--",
         sys.executable, EXAMPLE, "--steps", "100000", "--sleep", "0.05", "--hidden", "32"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        meta_file = run / "ranks" / "rank-0.json"
        while time.monotonic() < deadline and proc.poll() is None:
            if meta_file.exists() and json.loads(meta_file.read_text())["steps_completed"] >= 1:
                break
            time.sleep(0.2)
        time.sleep(1.0)  # a few steps inside the (open) window
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGINT, err
    meta = _meta(run)
    assert meta["exit_code"] == 130
    (rank,) = meta["ranks"]
    assert rank["stop_reason"] == "exit"  # flushed by the interpreter's exit handlers
    (trace,) = load_traces([run / "traces"])
    steps = list(trace.steps()["step"])
    assert steps[0] == 1 and steps == list(range(1, len(steps) + 1))
    assert (run / "summary.json").exists()


@needs_torch
def test_zero_code_mode_marks_steps_at_optimizer_step(tmp_path: Path) -> None:
    script = tmp_path / "plain_train.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            model = torch.nn.Linear(16, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            aux = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
            for _ in range(5):
                loss = model(torch.randn(4, 16)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                aux.step()  # a second optimizer: still one step per iteration
            """
        )
    )
    run = tmp_path / "run"
    r = gpuscope(["run", "-o", str(run), "--steps", "1:3", "--no-report", "--",
                  sys.executable, str(script)])  # fmt: skip
    assert r.returncode == 0, r.stderr
    (rank,) = _meta(run)["ranks"]
    assert rank["step_source"] == "optimizer" and rank["steps_completed"] == 5
    (trace,) = load_traces([run / "traces"])
    assert list(trace.steps()["step"]) == [1, 2]
    assert (trace.host["name"].astype(str) == "aten::addmm").any()


def test_nsys_without_nsys_exits_2_before_starting_anything(tmp_path: Path) -> None:
    run = tmp_path / "run"
    marker = tmp_path / "started"
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if not (Path(p) / "nsys").exists())  # fmt: skip
    r = gpuscope(
        ["run", "-o", str(run), "--nsys", "--", sys.executable, "-c",
         f"open({str(marker)!r}, 'w')"],
        env={"PATH": path},
    )  # fmt: skip
    assert r.returncode == 2
    assert "nsys" in r.stderr and "Traceback" not in r.stderr
    assert not marker.exists() and not run.exists()


def test_refuses_a_non_empty_run_directory_without_force(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "keep.txt").write_text("user data")
    cmd = [sys.executable, "-c", "pass"]
    r = gpuscope(["run", "-o", str(run), "--", *cmd])
    assert r.returncode == 2 and "--force" in r.stderr
    r = gpuscope(["run", "-o", str(run), "--force", "--", *cmd])
    assert r.returncode == 0, r.stderr
    assert (run / "keep.txt").read_text() == "user data"  # --force replaces only our files


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run"], "Missing argument"),
        (["run", "--steps", "5", "--", "true"], "--steps"),
        (["run", "--nvml-hz", "-1", "--", "true"], "--nvml-hz"),
        (["run", "--", "no-such-program-xyz"], "command not found"),
        (["run", "--step", "2:4", "--", "true"], "No such option"),
    ],
)
def test_bad_usage_exits_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    r = gpuscope([*args[:1], "-o", str(tmp_path / "run"), *args[1:]] if len(args) > 1 else args)
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "run").exists()


def test_sigterm_is_forwarded_to_the_whole_process_group(tmp_path: Path) -> None:
    grandchild = tmp_path / "grandchild.py"
    grandchild.write_text(
        textwrap.dedent(
            """
            import os, signal, sys, time
            tmp = sys.argv[1]
            def on_term(*a):
                open(os.path.join(tmp, "grandchild"), "w").close()
                os._exit(0)
            signal.signal(signal.SIGTERM, on_term)
            open(os.path.join(tmp, "grandchild_ready"), "w").close()
            time.sleep(120)
            """
        )
    )
    child = tmp_path / "child.py"
    child.write_text(
        textwrap.dedent(
            """
            import os, signal, subprocess, sys, time
            tmp = sys.argv[1]
            gc = subprocess.Popen([sys.executable, os.path.join(tmp, "grandchild.py"), tmp])
            def on_term(*a):
                open(os.path.join(tmp, "child"), "w").close()
                gc.wait(timeout=60)
                sys.exit(7)
            signal.signal(signal.SIGTERM, on_term)
            open(os.path.join(tmp, "child_ready"), "w").close()
            time.sleep(120)
            """
        )
    )
    proc = subprocess.Popen(
        [*GPUSCOPE, "run", "-o", str(tmp_path / "run"), "--", sys.executable, str(child),
         str(tmp_path)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            (tmp_path / "child_ready").exists() and (tmp_path / "grandchild_ready").exists()
        ):
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 7, err
    assert (tmp_path / "child").exists() and (tmp_path / "grandchild").exists()
    assert _meta(tmp_path / "run")["exit_code"] == 7
