"""The memory a task may plan with: MemAvailable, or less under the process's cgroup limits
(v1 and v2, nested, the kernel's reclaimable file pages not counted as used)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports.summary import planning
from reports.summary.planning import NO_LIMIT, cgroup_room_bytes

MIB = 2**20


def _room(tmp_path: Path, cgroup: str, files: dict[str, str]) -> int | None:
    """:func:`cgroup_room_bytes` with this ``/proc/self/cgroup`` text and these files under a
    fake ``/sys/fs/cgroup``."""
    proc, fs = tmp_path / "cgroup", tmp_path / "fs"
    proc.write_text(cgroup)
    for rel, text in files.items():
        (fs / rel).parent.mkdir(parents=True, exist_ok=True)
        (fs / rel).write_text(text)
    return cgroup_room_bytes(proc, fs)


def test_v2_room_is_the_least_over_the_cgroup_and_its_ancestors(tmp_path: Path) -> None:
    files = {
        "job/memory.max": str(1000 * MIB),
        "job/memory.current": str(700 * MIB),
        "job/memory.stat": f"anon 1\ninactive_file {100 * MIB}\nactive_file 5\n",
        "job/step/memory.max": "max",
        "job/step/memory.current": str(650 * MIB),
    }
    # the job's limit binds: 1000 − (700 − 100 reclaimable); the step has none
    assert _room(tmp_path, "0::/job/step\n", files) == 400 * MIB


def test_v1_memory_hierarchy_with_a_limit_on_the_process_cgroup(tmp_path: Path) -> None:
    files = {
        "memory/memory.limit_in_bytes": str(NO_LIMIT * 2 - 4096),  # the root: no limit
        "memory/memory.usage_in_bytes": str(5000 * MIB),
        "memory/slurm/job1/memory.limit_in_bytes": str(2048 * MIB),
        "memory/slurm/job1/memory.usage_in_bytes": str(600 * MIB),
        "memory/slurm/job1/memory.stat": f"cache 9\ntotal_inactive_file {50 * MIB}\n",
    }
    cgroup = "5:cpu,cpuacct:/\n4:memory:/slurm/job1\n0::/\n"
    assert _room(tmp_path, cgroup, files) == (2048 - 550) * MIB


def test_no_limit_anywhere_is_none(tmp_path: Path) -> None:
    files = {
        "memory/a/memory.limit_in_bytes": "9223372036854771712",
        "memory/a/memory.usage_in_bytes": "1",
    }
    assert _room(tmp_path, "4:memory:/a\n0::/\n", files) is None
    assert cgroup_room_bytes(tmp_path / "missing", tmp_path / "fs") is None


def test_a_container_root_cgroup_v2_limit_applies(tmp_path: Path) -> None:
    files = {"memory.max": str(300 * MIB), "memory.current": str(100 * MIB)}
    assert _room(tmp_path, "0::/\n", files) == 200 * MIB


def test_available_memory_takes_the_cgroup_room_when_lower(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(planning, "cgroup_room_bytes", lambda: 123 * MIB)
    assert planning.available_memory_bytes() == 123 * MIB
    monkeypatch.setattr(planning, "cgroup_room_bytes", lambda: -5)
    assert planning.available_memory_bytes() == 0
    monkeypatch.setattr(planning, "cgroup_room_bytes", lambda: 1 << 60)
    assert 0 < planning.available_memory_bytes() < 1 << 60
