"""``hashing.value_digest`` keys the per-rank results by the side inputs: equal inputs give
one digest in every process, whatever ``PYTHONHASHSEED`` (a pickled frozenset follows the
string hashes, which each process randomises); other inputs give another."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field

from analyzers.inputs import AnalysisInputs
from collectors.cache.hashing import canonical, value_digest
from collectors.peaks import load_peaks
from tests.support.env import REPO

DIGEST = (
    "from analyzers.inputs import AnalysisInputs; from collectors.peaks import load_peaks; "
    "from collectors.cache.hashing import value_digest; "
    "print(value_digest(AnalysisInputs(gpu_peaks=load_peaks(None))))"
)


def _digest_with_seed(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-c", DIGEST], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_built_in_peak_table_has_one_digest_in_every_process() -> None:
    assert any(g.unverified for g in load_peaks(None).gpus)  # the frozensets are there
    digests = {_digest_with_seed(seed) for seed in ("1", "2", "3", "4")}
    assert len(digests) == 1
    assert digests == {value_digest(AnalysisInputs(gpu_peaks=load_peaks(None)))}


@dataclass(frozen=True)
class _Holder:
    keys: frozenset[str] = field(default_factory=frozenset)
    extra: dict[str, set[int]] = field(default_factory=dict)


def test_sets_in_any_order_give_one_digest_and_other_contents_another() -> None:
    words = [f"key{i}" for i in range(50)]
    a = _Holder(frozenset(words), {"x": set(range(40))})
    b = _Holder(frozenset(reversed(words)), {"x": set(reversed(range(40)))})
    assert value_digest(a) == value_digest(b)
    assert value_digest(a) != value_digest(_Holder(frozenset(words[:-1]), {"x": set(range(40))}))
    assert value_digest(a) != value_digest(_Holder(frozenset(words), {"x": set(range(39))}))


def test_a_set_and_a_tuple_of_the_same_elements_differ() -> None:
    assert canonical(frozenset({"a"})) != canonical(("a",))
    assert value_digest({"a": 1}) != value_digest([("a", 1)])
