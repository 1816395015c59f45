"""Console name cutting keeps names distinguishable: Tensile GEMM kernels of a real MI300X
trace share their first 59 characters (``Cijk_Alik_Bljk_BBS_BH_Bias_HA…``) yet print apart."""

from __future__ import annotations

import pytest
from rich.console import Console

from reports import fmt
from reports.console import kernel_table
from tests.support.amd_traces import raw_events, tracelens_path, tracelens_traces

XDIT = "inference/xdit_flux.1_aiter_sage/profile_trace_rank_0.json.gz"


def _tensile_names() -> list[str]:
    if XDIT not in tracelens_traces():
        pytest.skip("TraceLens traces not present")
    ev = raw_events(tracelens_path(XDIT))["traceEvents"]
    prefix = "Cijk_Alik_Bljk_BBS_BH_Bias_HA"
    return sorted(
        {e["name"] for e in ev if e.get("cat") == "kernel" and e["name"].startswith(prefix)}
    )


@pytest.mark.parametrize("width", [30, 60])
def test_names_equal_in_their_first_characters_stay_distinct(width: int) -> None:
    names = _tensile_names()
    assert len(names) == 24 and len({n[: width - 1] for n in names}) < len(names)
    cut = [fmt.cut_name(n, width) for n in names]
    assert len(set(cut)) == len(names)
    for n, c in zip(names, cut, strict=True):
        assert len(c) == width
        head, rest = c.split("…")
        tail, tag = rest.rsplit(" #", 1)
        assert n.startswith(head) and n.endswith(tail) and tag == fmt.name_tag(n)


def test_kernel_table_prints_every_tensile_kernel_apart() -> None:
    names = _tensile_names()
    rank = {
        "rank": 0,
        "kernel_summary": [
            {
                "name": n,
                "type": "COMPUTATION",
                "count": 1,
                "total_ns": 1000,
                "avg_ns": 1000,
                "median_ns": 1000,
                "max_ns": 1000,
                "time_pct": 1.0,
            }
            for n in names
        ],
    }
    console = Console(width=200, record=True)
    console.print(kernel_table(rank, top=len(names), name_width=30))
    lines = [ln for ln in console.export_text().splitlines() if "Cijk" in ln]
    shown = {ln.split("│")[1].strip() for ln in lines}
    assert len(lines) == len(shown) == len(names)


def test_short_names_and_narrow_widths_are_unchanged() -> None:
    assert fmt.cut_name("aten::mm", 30) == "aten::mm"
    assert fmt.cut_name("abcdefghijklmnopqrstuvwxyz", 10) == "abcdefghi…"
    tag = fmt.name_tag("x" * 40)
    assert len(tag) == 4 and tag == fmt.name_tag("x" * 40)  # stable across calls and runs
