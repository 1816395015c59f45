"""The fuzz suite's long run (docs/reliability.md "Fuzzing"): ``tests/fuzz`` with every test's
example count scaled, outcome counts per reader written to a JSON file and printed.

    PYTHONPATH=$PWD python benchmarks/fuzz_long_run.py [--scale 10] [--report FILE]

Scale 10 runs about 5,400 cases (the normal suite runs about 540), single process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=10.0)
    ap.add_argument("--report", type=Path, default=Path("fuzz-long-run.json"))
    args = ap.parse_args()
    args.report.unlink(missing_ok=True)
    env = {
        **os.environ,
        "GPUSCOPE_FUZZ_SCALE": str(args.scale),
        "GPUSCOPE_FUZZ_REPORT": str(args.report.resolve()),
    }
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/fuzz"]
    rc = subprocess.call(cmd, cwd=REPO, env=env)
    counts = json.loads(args.report.read_text()) if args.report.exists() else {}
    total = sum(c.get("cases", 0) for k, c in counts.items() if "(" not in k)
    print(f"pytest exit {rc}; {total} cases in {time.monotonic() - t0:.0f} s")
    for reader, c in sorted(counts.items()):
        print(f"  {reader}: {json.dumps(c, sort_keys=True)}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
