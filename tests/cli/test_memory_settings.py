"""The memory settings of the trace-reading commands (cli.memory_settings): numpy's huge-page
advice off and glibc's malloc thresholds fixed, each unless the user set it; only the commands
that read traces apply them, and the summary does not change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli import memory_settings
from tests.support.cli_run import run_cli
from tests.support.env import REPO

SAMPLE = REPO / "sample_traces" / "torch_cpu"


class FakeLibc:
    def __init__(self, result: int = 1) -> None:
        self.calls: list[tuple[int, int]] = []
        self.result = result

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return self.result


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for k in (memory_settings.ENV, memory_settings.NUMPY_ENV, "GLIBC_TUNABLES"):
        monkeypatch.delenv(k, raising=False)
    for k in memory_settings.USER_MALLOC_ENV:
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def test_both_settings_applied_when_the_user_set_neither(clean_env: pytest.MonkeyPatch) -> None:
    libc = FakeLibc()
    setter: list[bool] = []
    numpy_core = sys.modules["numpy"]._core.multiarray  # numpy is imported in this process
    clean_env.setattr(numpy_core, "_set_madvise_hugepage", setter.append, raising=False)
    assert memory_settings.apply(libc) == ["numpy-hugepages-off", "malloc-thresholds"]
    assert setter == [False]
    assert libc.calls == [(-3, 32 << 20), (-1, 256 << 20), (-2, 64 << 20)]
    assert memory_settings.NUMPY_ENV not in os.environ  # numpy imported: environment untouched


@pytest.mark.parametrize(
    "var, value",
    [
        ("MALLOC_MMAP_THRESHOLD_", "1048576"),
        ("MALLOC_TRIM_THRESHOLD_", "0"),
        ("MALLOC_TOP_PAD_", "0"),
        ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=1048576"),
    ],
)
def test_a_user_malloc_setting_keeps_glibc_as_it_is(
    clean_env: pytest.MonkeyPatch, var: str, value: str
) -> None:
    clean_env.setenv(var, value)
    clean_env.setenv(memory_settings.NUMPY_ENV, "1")
    libc = FakeLibc()
    assert memory_settings.apply(libc) == []
    assert libc.calls == []
    assert os.environ[memory_settings.NUMPY_ENV] == "1"


def test_opting_out_changes_nothing(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(memory_settings.ENV, "0")
    libc = FakeLibc()
    assert memory_settings.apply(libc) == []
    assert libc.calls == [] and memory_settings.NUMPY_ENV not in os.environ


def test_a_refused_mallopt_is_not_reported_as_applied(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(memory_settings.NUMPY_ENV, "1")
    assert memory_settings.apply(FakeLibc(result=0)) == []


PROBE = """
import sys
from cli import memory_settings
if sys.argv[1] == "numpy-first":
    import numpy
done = memory_settings.apply()
import numpy
print(done, numpy._core.multiarray._get_madvise_hugepage())
"""


def _probe(order: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != memory_settings.NUMPY_ENV}
    base = {k: v for k, v in base.items() if k not in memory_settings.USER_MALLOC_ENV}
    p = subprocess.run(
        [sys.executable, "-c", PROBE, order],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**base, **env},
        check=True,
    )
    return p.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
@pytest.mark.parametrize("order", ["settings-first", "numpy-first"])
def test_a_fresh_process_gets_both_settings_from_the_real_libraries(order: str) -> None:
    if not os.confstr("CS_GNU_LIBC_VERSION"):
        pytest.skip("not glibc")
    assert _probe(order) == "['numpy-hugepages-off', 'malloc-thresholds'] False"


def test_numpy_keeps_the_users_huge_page_choice() -> None:
    out = _probe("settings-first", NUMPY_MADVISE_HUGEPAGE="1")
    assert out.endswith(" True") and "numpy-hugepages-off" not in out


@pytest.mark.parametrize(
    "argv",
    [
        ["analyze", "missing-trace"],
        ["report", "missing-trace", "-o", "out.html"],
        ["export", "missing-trace", "--perfetto", "out.json"],
        ["compare", "missing-a", "missing-b"],
        ["critical-path", "missing-trace"],
    ],
)
def test_every_trace_reading_command_applies_the_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str]
) -> None:
    calls: list[None] = []
    monkeypatch.setattr(memory_settings, "apply", lambda: calls.append(None) or [])
    monkeypatch.chdir(tmp_path)
    res = run_cli(argv)
    assert res.rc == 2 and "missing-" in res.err  # bad input, after the settings
    assert calls == [None]


def test_the_summary_is_the_same_with_and_without_the_settings(tmp_path: Path) -> None:
    outs = []
    for setting in ("0", ""):
        out = tmp_path / f"summary{setting}.json"
        env = {**os.environ, memory_settings.ENV: setting}
        cmd = [sys.executable, "-m", "cli.main", "analyze", str(SAMPLE), "--json", str(out)]
        subprocess.run([*cmd, "--no-cache"], cwd=REPO, env=env, check=True, capture_output=True)
        doc = json.loads(out.read_text())
        doc.pop("run_info", None)
        outs.append(doc)
    assert outs[0] == outs[1]
