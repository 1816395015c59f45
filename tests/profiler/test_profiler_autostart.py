"""Zero-code capture plumbing: launcher detection, the post-import hook, the sitecustomize shim."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from profiler import autostart
from profiler import session as session_mod
from profiler.launch import SHIM_DIR

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "launcher"),
    [
        (["/usr/local/bin/torchrun", "--nproc_per_node", "8", "train.py"], True),
        (["/site-packages/torch/distributed/run.py", "--standalone", "t.py"], True),
        (["/site-packages/torch/distributed/launch.py", "t.py"], True),
        (["examples/train_tiny.py"], False),
        (["-c"], False),
    ],
)
def test_torch_launchers_are_recognised(argv: list[str], launcher: bool) -> None:
    assert autostart.is_launcher(argv) is launcher


def test_multiprocessing_children_are_recognised() -> None:
    assert autostart.is_multiprocessing_child(["-c", "--multiprocessing-fork"])
    assert not autostart.is_multiprocessing_child(["train.py"])


def test_post_import_hook_runs_after_the_module_loaded(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "gpuscope_probe_mod.py").write_text("VALUE = 41\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[int] = []

    def callback() -> None:
        seen.append(sys.modules["gpuscope_probe_mod"].VALUE + 1)

    finder = autostart._PostImportFinder("gpuscope_probe_mod", callback)
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    try:
        import gpuscope_probe_mod

        assert seen == [42]
        assert finder not in sys.meta_path  # one-shot
        assert type(gpuscope_probe_mod.__loader__).__name__ == "SourceFileLoader"
    finally:
        sys.modules.pop("gpuscope_probe_mod", None)


def test_a_descendant_of_the_capturing_process_does_not_capture(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("GPUSCOPE_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("GPUSCOPE_CAPTURE_PID", str(os.getpid() + 1))
    assert session_mod.env_session() is None
    monkeypatch.delenv("GPUSCOPE_RUN_DIR")
    monkeypatch.delenv("GPUSCOPE_CAPTURE_PID")
    assert session_mod.env_session() is None  # outside gpuscope run: nothing


def test_shim_chains_to_the_next_sitecustomize(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    marker = tmp_path / "marker"
    (other / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SHIM_DIR), str(other), str(REPO)]),
        "GPUSCOPE_RUN_DIR": str(tmp_path / "run"),
    }
    code = "pass"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert marker.read_text() == "ran"
    assert not (tmp_path / "run").exists()  # no torch imported, no step: nothing written


def test_shim_arms_the_torch_hook_without_importing_torch(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SHIM_DIR), str(REPO)]),
        "GPUSCOPE_RUN_DIR": str(tmp_path / "run"),
    }
    code = (
        "import sys\n"
        "assert 'torch' not in sys.modules\n"
        "names = [type(f).__name__ for f in sys.meta_path]\n"
        "assert '_PostImportFinder' in names, names\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
