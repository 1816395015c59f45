"""The kernel occupancy's grouping and advice computed without pandas groupby or every
what-if curve equal what they replaced: launch configurations numbered in order of first
appearance (``groupby(KEYS, sort=False).ngroup()``), kernel names factorized from the
categorical's codes (``pd.factorize`` of the names as objects), and the flag's suggestion
from the curves up to the first axis that gives one (``what_if(...).suggestions[0]``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyzers.arch import arch_limits
from analyzers.kernel_occupancy import KEYS, _config_codes, _names
from analyzers.occupancy import LaunchConfig, first_suggestion, what_if


@pytest.mark.parametrize("distinct", [7, 3000])  # 3000 per column: the folded codes
def test_config_codes_equal_groupby_ngroup(distinct: int) -> None:
    rng = np.random.default_rng(distinct)
    n = 20_000
    cols = rng.integers(-1, distinct, (n, len(KEYS))) * 1024
    cols[rng.random(n) < 0.5] = cols[0]  # repeated configurations
    want = pd.DataFrame(cols, columns=KEYS).groupby(KEYS, sort=False).ngroup().to_numpy()
    assert np.array_equal(_config_codes(cols), want)


def test_names_equal_factorize_of_the_objects() -> None:
    rng = np.random.default_rng(1)
    pool = np.array(["gemm", "nccl", "reduce", None, "copy"], dtype=object)
    col = pd.Series(pool[rng.integers(0, len(pool), 5_000)], dtype="category")
    rows = np.sort(rng.choice(len(col), 3_000, replace=False))
    codes, names = _names(col, rows)
    want_codes, want_names = pd.factorize(col.astype(object).to_numpy()[rows])
    assert np.array_equal(codes, want_codes)
    assert list(names) == list(want_names)
    codes, names = _names(col.astype(object), rows)  # not a categorical: factorized as is
    assert np.array_equal(codes, want_codes) and list(names) == list(want_names)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_75"])
def test_first_suggestion_equals_the_first_of_what_if(arch: str) -> None:
    lim = arch_limits(arch)
    rng = np.random.default_rng(len(arch))
    seen = 0
    for _ in range(60):
        threads = int(rng.choice([32, 64, 96, 128, 256, 384, 512, 768, 1024]))
        regs = int(rng.choice([0, 16, 32, 40, 64, 96, 128, 168, 255]))
        smem = int(rng.choice([0, 1024, 8192, 20000, 48 * 1024]))
        cfg = LaunchConfig(threads, regs, min(smem, 48 * 1024), 0)
        wi = what_if(lim, cfg)
        got = first_suggestion(lim, cfg)
        assert got == (wi.suggestions[0] if wi.suggestions else None)
        seen += got is not None
    assert seen > 10


def test_config_codes_of_configurations_whose_digits_overflow_int64() -> None:
    # 1024 distinct values per column: 1024**7 = 2**70 mixed-radix codes; row (16, 0, ...)
    # would wrap around to row (0, 0, ...)'s code 0 without folding
    cols = np.array([[i] * len(KEYS) for i in range(1024)] + [[16] + [0] * 6], dtype=np.int64)
    want = pd.DataFrame(cols, columns=KEYS).groupby(KEYS, sort=False).ngroup().to_numpy()
    got = _config_codes(cols)
    assert np.array_equal(got, want) and got[-1] == 1024
