"""``gpuscope analyze`` under a memory limit, with and without spilling (docs/scale.md §6).

For each limit (MiB) and each ``GPUSCOPE_SPILL`` mode, runs ``python -m cli.main analyze TRACE
--json F --no-cache`` in a fresh memory cgroup of that limit (cgroup v2 ``memory.max`` with
``memory.swap.max`` 0, or v1 ``memory.limit_in_bytes``), and prints whether it completed, its
wall time, the group's peak usage (v2 ``memory.peak`` where the kernel has it, v1
``memory.max_usage_in_bytes``; page cache included) and whether its JSON summary is
byte-identical to the summary of a run without a limit.  A process killed for memory shows
``killed``.

Needs a writable memory cgroup (root, or a delegated v2 subtree); where there is none it says so
and exits 2.  It changes no system setting: each group is made beside this process's own, used
once and removed.

Usage::

    python benchmarks/bench_spill.py TRACE --limits 3800,3400,3000 [--modes never,auto]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = Path("/sys/fs/cgroup")
MIB = 2**20


def _own_group() -> tuple[str, Path] | None:
    """``(version, directory)`` where a memory group can be made, else None."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            d = ROOT / "memory" / path.strip("/")
            if (d / "memory.limit_in_bytes").exists() and os.access(d, os.W_OK):
                return "v1", d
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and not controllers:
            d = ROOT / path.strip("/")
            controls = d / "cgroup.subtree_control"
            if controls.exists() and "memory" in controls.read_text() and os.access(d, os.W_OK):
                return "v2", d
    return None


class Group:
    """One memory cgroup of *limit* bytes under *parent*, removed on exit."""

    def __init__(self, version: str, parent: Path, limit: int) -> None:
        self.version = version
        self.dir = parent / f"gpuscope-bench-spill-{os.getpid()}-{time.monotonic_ns()}"
        self.dir.mkdir()
        if version == "v1":
            (self.dir / "memory.limit_in_bytes").write_text(str(limit))
        else:
            (self.dir / "memory.max").write_text(str(limit))
            swap = self.dir / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")

    def enter(self) -> None:
        """Move the calling process into the group (run in the child before exec)."""
        (self.dir / "cgroup.procs").write_text(str(os.getpid()))

    def peak_mib(self) -> int | None:
        name = "memory.max_usage_in_bytes" if self.version == "v1" else "memory.peak"
        try:
            return int((self.dir / name).read_text()) // MIB
        except (OSError, ValueError):
            return None

    def __enter__(self) -> Group:
        return self

    def __exit__(self, *exc: object) -> None:
        for _ in range(50):  # the killed process may take a moment to leave
            try:
                self.dir.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def _analyze(trace: str, out: Path, mode: str, group: Group | None) -> tuple[int, float, str]:
    env = dict(os.environ, GPUSCOPE_SPILL=mode)
    cmd = [sys.executable, "-m", "cli.main", "analyze", trace, "--json", str(out)]
    t = time.perf_counter()
    r = subprocess.run(
        [*cmd, "--no-cache", "--force"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=group.enter if group is not None else None,
    )
    notes = [line for line in r.stderr.splitlines() if "memory-mapped from" in line]
    return r.returncode, time.perf_counter() - t, "spilled" if notes else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--limits", required=True, help="comma-separated MiB")
    ap.add_argument("--modes", default="never,auto")
    args = ap.parse_args(argv)
    where = _own_group()
    if where is None:
        print("bench_spill: no writable memory cgroup here (needs root or a delegated subtree)")
        return 2
    version, parent = where
    limits = [int(x) for x in args.limits.split(",")]
    modes = args.modes.split(",")
    work = Path(tempfile.mkdtemp(prefix="gpuscope-bench-spill-"))
    ref = work / "free.json"
    rc, wall, _ = _analyze(args.trace, ref, "never", None)
    print(f"cgroup {version} under {parent}; {args.trace}")
    print(f"no limit: rc {rc}, {wall:.1f} s")
    print("| limit MiB | GPUSCOPE_SPILL | result | wall s | group peak MiB | summary |")
    print("|---:|---|---|---:|---:|---|")
    for limit in limits:
        for mode in modes:
            out = work / f"{mode}-{limit}.json"
            with Group(version, parent, limit * MIB) as g:
                rc, wall, spilled = _analyze(args.trace, out, mode, g)
                peak = g.peak_mib()
            result = "killed" if rc in (-9, 137) else f"rc {rc}"
            same = ""
            if rc == 0:
                same = "identical" if out.read_bytes() == ref.read_bytes() else "DIFFERENT"
            note = f" ({spilled})" if spilled else ""
            print(f"| {limit} | {mode}{note} | {result} | {wall:.1f} | {peak} | {same} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
