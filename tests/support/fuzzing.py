"""Shared machinery of the fuzz suite (``tests/fuzz/``, docs/reliability.md "Fuzzing").

* :func:`examples`: how many cases a fuzz test runs — its share of the normal suite's bound,
  times ``GPUSCOPE_FUZZ_SCALE`` (or exactly ``GPUSCOPE_FUZZ_EXAMPLES`` per test) for the long
  run; hypothesis is derandomized so that a CI run is reproducible;
* :func:`run_case`: one command run in this process (:func:`support.cli_run.run_cli`) under a
  per-case timeout (SIGALRM: a hang fails the case instead of the suite), its contract checked
  (:func:`support.cli_run.check_contract`) and its outcome counted per reader;
* :func:`weird`: values of the wrong type or impossible (None, text, huge and negative
  integers, NaN, infinities, lists, objects) to put where a reader expects a number or a name;
* :func:`mutate_bytes`: truncations, byte flips, insertions, deletions and repeats of a file.

With ``GPUSCOPE_FUZZ_REPORT=FILE`` the outcome counts (per reader: cases, exit 0, exit 2) are
merged into *FILE* (JSON) at exit; ``benchmarks/fuzz_long_run.py`` uses it for the long run.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import signal
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.support.cli_run import CliResult, check_contract, run_cli

CASE_TIMEOUT_S = 30.0
"""Longest one case may take (a hang is a failure)."""

OUTCOMES: defaultdict[str, Counter[str]] = defaultdict(Counter)
"""Per reader: ``cases``, ``exit 0``, ``exit 2``."""


def examples(normal: int) -> int:
    """The example count of a fuzz test whose share of the normal suite is *normal* cases."""
    exact = os.environ.get("GPUSCOPE_FUZZ_EXAMPLES")
    if exact:
        return max(1, int(exact))
    return max(1, round(normal * float(os.environ.get("GPUSCOPE_FUZZ_SCALE", "1"))))


def fuzz_settings(normal: int) -> settings:
    """Hypothesis settings: *normal* examples (see :func:`examples`), derandomized, no deadline
    (the per-case timeout bounds a case), no database (nothing written beside the tests)."""
    return settings(
        max_examples=examples(normal),
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )


class CaseTimeout(Exception):
    """A case ran past :data:`CASE_TIMEOUT_S`."""


@contextlib.contextmanager
def case_timeout(seconds: float = CASE_TIMEOUT_S) -> Iterator[None]:
    """Raise :class:`CaseTimeout` in this (main) thread after *seconds*."""

    def _alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"case ran past {seconds:g} s (a hang?)")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_case(
    reader: str, argv: Sequence[str | Path], names: Sequence[str | Path], summary: Path | None
) -> tuple[CliResult, Any]:
    """Run ``gpuscope ARGV`` in this process, check the contract (exit 0 with a summary the
    validating reader accepts, or exit 2 with one line naming one of *names*), count the outcome
    under *reader*; returns the result and the validated summary (or None)."""
    if summary is not None and summary.exists():
        summary.unlink()
    with case_timeout():
        res = run_cli(list(argv))
    OUTCOMES[reader]["cases"] += 1
    OUTCOMES[reader][f"exit {res.rc}"] += 1
    doc = check_contract(res, list(names), summary)
    return res, doc


def _write_report() -> None:
    target = os.environ.get("GPUSCOPE_FUZZ_REPORT")
    if not target or not OUTCOMES:
        return
    p = Path(target)
    merged: dict[str, dict[str, int]] = {}
    with contextlib.suppress(OSError, ValueError):
        merged = json.loads(p.read_text())
    for reader, counts in OUTCOMES.items():
        row = merged.setdefault(reader, {})
        for k, v in counts.items():
            row[k] = row.get(k, 0) + v
    p.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")


atexit.register(_write_report)


# --- values -------------------------------------------------------------------------------

EDGE_INTS = [0, -1, 1, 2**31, 2**53 + 1, 2**60, 2**62 + 1, 2**63 - 1, 2**63, 2**64, -(2**63)]


def weird() -> st.SearchStrategy[Any]:
    """A value of the wrong type or an impossible one."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from(EDGE_INTS),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e-320, 1e308, -1e9]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
        st.lists(st.integers(), max_size=3),
        st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    )


def sometimes_weird(usual: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly *usual*, sometimes :func:`weird`."""
    return st.one_of(usual, usual, usual, weird())


# --- byte mutations -----------------------------------------------------------------------

MUTATIONS = ("truncate", "flip", "insert", "delete", "repeat", "zero")


@st.composite
def byte_mutations(draw: st.DrawFn, n_max: int = 4) -> list[tuple[str, float, float, bytes]]:
    """A list of (kind, where ∈ [0,1), length fraction, bytes) mutations."""
    return draw(
        st.lists(
            st.tuples(
                st.sampled_from(MUTATIONS),
                st.floats(0, 1, exclude_max=True),
                st.floats(0, 0.05),
                st.binary(min_size=1, max_size=8),
            ),
            min_size=1,
            max_size=n_max,
        )
    )


def mutate_bytes(data: bytes, mutations: Sequence[tuple[str, float, float, bytes]]) -> bytes:
    """*data* with each mutation applied in turn."""
    b = bytearray(data)
    for kind, where, frac, extra in mutations:
        if not b:
            break
        i = int(where * len(b))
        n = max(1, int(frac * len(b)))
        if kind == "truncate":
            del b[i:]
        elif kind == "flip":
            b[i] ^= extra[0] or 0xFF
        elif kind == "insert":
            b[i:i] = extra
        elif kind == "delete":
            del b[i : i + n]
        elif kind == "repeat":
            b[i:i] = b[i : i + n]
        elif kind == "zero":
            b[i : i + n] = bytes(len(b[i : i + n]))
    return bytes(b)
