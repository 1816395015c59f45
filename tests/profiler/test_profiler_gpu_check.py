"""scripts/gpu-check on a machine without an NVIDIA GPU says so and exits non-zero."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _has_gpu() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
        return n > 0
    except Exception:
        return False


@pytest.mark.skipif(_has_gpu(), reason="this machine has a GPU: run scripts/gpu-check itself")
def test_gpu_check_without_a_gpu_says_so_and_fails(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gpu-check"), "-o", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert r.returncode == 1
    assert "no NVIDIA GPU on this machine" in r.stdout
    assert not (tmp_path / "runs").exists()  # nothing was started
