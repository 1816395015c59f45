"""``gpuscope occupancy`` answers a block that fits no SM as NVIDIA's calculator does: 0 blocks
per SM with the limiting resource named, and the change that would let it fit (issue 16)."""

from __future__ import annotations

import json

import pytest

from cli.main import main


def test_shared_memory_above_the_opt_in_limit_gives_zero_blocks_not_an_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["occupancy", "--arch", "sm_90", "--threads", "128", "--dyn-smem", "240000"]
    assert main([*args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    # occupancy.md §2.4: roundup(240000 + 1024, 128) = 241024 > 232448 + 1024 -> limit 0
    assert (d["active_blocks_per_sm"], d["occupancy_pct"], d["limiters"]) == (
        0,
        0.0,
        ["shared_memory"],
    )
    assert d["limits"]["shared_memory"] == 0 and d["alloc_smem_per_block"] == 241_024
    # the nearest size that fits: the opt-in maximum 232448 B -> 1 block of 4 warps = 6.25 %
    (s,) = [s for s in d["what_if"]["suggestions"] if s["change"] == "smem_per_block"]
    assert (s["to"], s["occupancy_pct"]) == (232_448, 6.25)
    assert main(args) == 0
    assert "active blocks/SM  0   (limited by shared_memory)" in capsys.readouterr().out
