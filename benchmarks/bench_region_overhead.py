"""Cost of one ``profiler.region`` (enter + exit) per call, against a reference in the same run.

    python benchmarks/bench_region_overhead.py [--calls 200000] [--repeat 5]

Each variant runs in its own interpreter (``GPUSCOPE_DISABLE`` is read at import):

* ``disabled``   — ``GPUSCOPE_DISABLE=1``;
* ``no session`` — enabled, no capture session (what a script pays outside ``gpuscope run``);
* ``session``    — enabled, active session outside the trace window (host timing record);
* ``in window``  — torch profiler recording: adds ``torch.profiler.record_function``;
* ``step``       — one ``profiler.step()`` with the torch backend before its window (the torch
  profiler's schedule advances; NVML off), for the per-step cost outside the window.

Each interpreter alternates its variant with the reference — ``with`` over a minimal no-op
context manager (the floor of any ``with`` statement) — ``repeat`` times and keeps the best of
each.  Prints ns per call, the ratio to the reference measured in the same interpreter, and the
region's own cost (variant − reference).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, tempfile
calls, repeat, variant = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
import profiler

class Null:
    __slots__ = ()
    def __enter__(self): return self
    def __exit__(self, *a): return False

def once(make):
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        with make("fwd"):
            pass
    return (time.perf_counter_ns() - t0) / calls

session = None
if variant in ("session", "in window", "step"):
    from profiler.session import Session
    backend = "host" if variant == "session" else "torch"
    steps = "0:1000" if variant == "in window" else "100000000:100000001"
    session = Session(tempfile.mkdtemp(), steps=steps, nvml_hz=0, backend=backend).start()
    if variant == "in window":
        calls = max(calls // 20, 1000)  # the torch profiler keeps every event in memory
null = Null()
ref = lambda name: null
if variant == "step":
    calls = max(calls // 10, 1000)

    class Step:  # profiler.step() inside the same with-statement harness
        __slots__ = ()
        def __enter__(self):
            profiler.step()
        def __exit__(self, *a):
            return False

    stepper = Step()
    profiler.region = lambda name: stepper
best_ref = best = None
for _ in range(repeat):  # interleaved with the reference: both see the same machine load
    r = once(ref)
    v = once(profiler.region)
    best_ref = r if best_ref is None else min(best_ref, r)
    best = v if best is None else min(best, v)
if session is not None:
    session.stop()
print(json.dumps({"variant": variant, "ns_per_call": best, "ref_ns": best_ref, "calls": calls}))
"""

VARIANTS = ("disabled", "no session", "session", "in window", "step")


def run_variant(variant: str, calls: int, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GPUSCOPE_RUN_DIR", None)
    env.pop("NVTX_INJECTION64_PATH", None)
    if variant == "disabled":
        env["GPUSCOPE_DISABLE"] = "1"
    else:
        env.pop("GPUSCOPE_DISABLE", None)
    with tempfile.TemporaryDirectory() as cwd:
        r = subprocess.run(
            [sys.executable, "-c", CHILD, str(calls), str(repeat), variant],
            capture_output=True, text=True, env=env, cwd=cwd, timeout=600,
        )  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"{variant}: failed\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--skip-torch", action="store_true", help="leave out the 'in window' case")
    args = p.parse_args(argv)
    variants = [v for v in VARIANTS if not (args.skip_torch and v in ("in window", "step"))]
    results = {v: run_variant(v, args.calls, args.repeat) for v in variants}
    head = ("variant", "ns/call", "reference", "ratio", "own ns", "calls")
    print("{:<12} {:>9} {:>10} {:>7} {:>8} {:>7}".format(*head))
    for v, r in results.items():
        ns, ref = r["ns_per_call"], r["ref_ns"]
        print(f"{v:<12} {ns:>9.1f} {ref:>10.1f} {ns / ref:>7.2f} {ns - ref:>8.1f} {r['calls']:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
