"""The Nsight Compute CSV reader's checks (docs/reliability.md): malformed CSV is one input
error or a skipped row, never ``csv.Error``; a value in a unit ncu does not write, not finite,
or negative where the unit cannot be, is left out with a warning instead of being read as if it
were in the base unit."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors import ncu
from collectors.ncu import read_ncu_csv
from tests.support.cli_run import check_contract, run_cli

HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
    '"Metric Value"'
)
METRICS = (
    ("gpu__time_duration.sum", "usecond", "292.93"),
    ("dram__bytes.sum", "Mbyte", "134.22"),
    ("sm__cycles_elapsed.avg.per_second", "cycle/nsecond", "1.41"),
    ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "1,048,576"),
)


def _row(kid: int, metric: str, unit: str, value: str, block: str = "(256, 1, 1)") -> str:
    return (
        f'"{kid}","1","app","host","gemm","1","7","{block}","(80, 1, 1)","0","9.0",'
        f'"Command line profiler metrics","{metric}","{unit}","{value}"'
    )


def _csv(tmp_path: Path, rows: list[str], name: str = "k.csv", end: str = "\n") -> Path:
    p = tmp_path / name
    p.write_bytes((end.join([HEADER, *rows]) + end).encode())
    return p


def _good(kid: int = 0) -> list[str]:
    return [_row(kid, *m) for m in METRICS]


def _roofline(p: Path) -> tuple[object, object]:
    res = run_cli(["roofline", p, "--json"])
    check_contract(res, [p])
    return res


def test_a_bare_carriage_return_inside_a_field_is_not_a_csv_error(tmp_path: Path) -> None:
    """Excel-style CR line ends and a CR inside an unquoted field (was ``csv.Error: new-line
    character seen in unquoted field``)."""
    rows = [*_good(0), _row(1, "gpu__time_duration.sum", "usecond", "1.0").replace('"1.0"', "1\r0")]
    p = _csv(tmp_path, rows)
    res = _roofline(p)
    assert res.rc == 0
    report = read_ncu_csv(p)
    assert report.launches[0].get("gpu__time_duration.sum") == pytest.approx(292_930.0)
    assert any("fields" in w for w in report.warnings)
    assert read_ncu_csv(_csv(tmp_path, _good(), "cr.csv", end="\r")).launches[0].metrics


@pytest.mark.parametrize(
    "junk", ["\x00", '"unterminated', "x" * 200_000], ids=["nul", "quote", "huge-field"]
)
def test_malformed_csv_is_one_input_error_or_read(tmp_path: Path, junk: str) -> None:
    p = _csv(tmp_path, [*_good(), _row(1, "m", "", junk)])
    res = _roofline(p)
    assert res.rc in (0, 2)


def test_a_unit_ncu_does_not_write_is_not_read_as_the_base_unit(tmp_path: Path) -> None:
    p = _csv(tmp_path, [*_good()[1:], _row(0, "gpu__time_duration.sum", "parsec", "3.0")])
    report = read_ncu_csv(p)
    la = report.launches[0]
    assert la.get("gpu__time_duration.sum") is None
    assert la.raw["gpu__time_duration.sum"] == ("parsec", "3.0")
    assert any("parsec" in w for w in report.warnings)
    res = _roofline(p)  # no duration left: exit 2 naming the file ("no kernel with ...")
    assert res.rc == 2 and "duration" in res.err


@pytest.mark.parametrize(
    ("unit", "value"),
    [("usecond", "-5"), ("usecond", "1e400"), ("Mbyte", "-1"), ("%", "-3"), ("inst", "nan")],
)
def test_impossible_values_are_left_out_with_a_warning(
    tmp_path: Path, unit: str, value: str
) -> None:
    metric = {"usecond": METRICS[0][0], "Mbyte": METRICS[1][0]}.get(unit, "some__metric.pct")
    p = _csv(tmp_path, [*_good(), _row(1, metric, unit, value)])
    report = read_ncu_csv(p)
    assert report.launches[1].get(metric) is None
    assert report.warnings
    assert _roofline(p).rc == 0


def test_huge_ids_and_dimensions_are_unknown(tmp_path: Path) -> None:
    big = "9" * 30
    rows = [r.replace('"0","1","app"', f'"{big}","{big}","app"') for r in _good()]
    rows = [r.replace("(256, 1, 1)", f"({big}, 1, 1)") for r in rows]
    la = read_ncu_csv(_csv(tmp_path, rows)).launches[0]
    assert la.id == -1 and la.process_id is None and la.block is None


@pytest.mark.parametrize(
    "unit",
    [
        "",
        "%",
        "byte",
        "Kbyte",
        "Gbyte/second",
        "nsecond",
        "usecond",
        "cycle/nsecond",
        "Ghz",
        "inst/cycle",
        "warp/cycle",
        "sector/request",
        "register/thread",
        "Kbyte/block",
        "block",
        "thread",
        "warp",
        "SM",
        "ns",
    ],
)
def test_units_ncu_writes_are_known(unit: str) -> None:
    assert ncu.known_unit(unit)


@pytest.mark.parametrize("unit", ["parsec", "furlong/fortnight", "Xbyte", "byte/parsec"])
def test_other_units_are_not(unit: str) -> None:
    assert not ncu.known_unit(unit)


def test_analyze_with_a_broken_ncu_csv_names_the_csv(tmp_path: Path) -> None:
    from tests.support.kineto_events import small_training_step, write_trace

    trace = write_trace(tmp_path / "t.json", small_training_step(1) + small_training_step(2, 100))
    p = tmp_path / "k.csv"
    p.write_bytes(b'"ID","Kernel Name"\n"1\x00\r\n')
    res = run_cli(["analyze", trace, "--ncu", p, "--no-cache"])
    check_contract(res, [p, trace])
