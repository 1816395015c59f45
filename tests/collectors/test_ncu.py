"""Nsight Compute CSV reader: real exports in ../shared/data/ncu and hand-made format fixtures."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from collectors.errors import InputError
from collectors.ncu import convert_unit, parse_number, read_ncu_csv
from tests.support.env import SHARED_DATA, shared_path

NCU_FILES = sorted(
    p.name
    for p in (SHARED_DATA / "ncu").glob("*.csv")
    if "_ncu_" in p.name or p.name.startswith("LearningNote4Dev")
)

HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
    '"Metric Value"'
)


def _raw_long(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Independent reading: lines before the '"ID"' line, then csv.DictReader rows."""
    text = path.read_text(encoding="utf-8-sig")
    lines = text.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith('"ID"'))
    return lines[:i], list(csv.DictReader(lines[i:]))


def _long_row(kid: int, name: str, metric: str, unit: str, value: str) -> str:
    return (
        f'"{kid}","1","app","host","{name}","1","7","(256, 1, 1)","(80, 1, 1)","0","9.0",'
        f'"Command line profiler metrics","{metric}","{unit}","{value}"'
    )


def test_shared_ncu_files_are_present() -> None:
    shared_path("ncu")
    assert len(NCU_FILES) == 10


@pytest.mark.parametrize("name", NCU_FILES)
def test_every_metric_value_matches_the_raw_string(name: str) -> None:
    path = shared_path("ncu", name)
    preamble, rows = _raw_long(path)
    report = read_ncu_csv(path)
    assert report.layout == "long"
    assert len(report.preamble) == len(preamble)
    assert [la.id for la in report.launches] == sorted({int(r["ID"]) for r in rows})
    by_id = {la.id: la for la in report.launches}
    for r in rows:
        la = by_id[int(r["ID"])]
        assert la.kernel_name == r["Kernel Name"]
        # every unit in these exports is already a base unit (no Kbyte/usecond scaling)
        assert r["Metric Unit"] in (
            "byte",
            "ns",
            "cycle",
            "cycle/second",
            "inst",
            "sector",
            "%",
            "",
        )
        assert la.metrics[r["Metric Name"]] == float(r["Metric Value"].replace(",", ""))
        assert la.raw[r["Metric Name"]] == (r["Metric Unit"], r["Metric Value"])


def test_windows_export_with_bom_and_program_output_before_the_header() -> None:
    path = shared_path("ncu", "GPU-Roofline-Profiler__results_sample_run_ncu_saxpy.csv")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    r = read_ncu_csv(path)
    assert r.preamble[0].startswith("==PROF== Connected")
    la = r.launches[0]
    # kernel name with commas inside the quoted field, anonymous namespace without its '<'
    assert la.kernel_name == "unnamed>::saxpy_kernel(float, const float *, float *, int)"
    assert (la.block, la.grid, la.cc) == ((256, 1, 1), (65536, 1, 1), "12.0")
    assert la.metrics["dram__bytes_op_read.sum"] == 134_221_568.0
    assert la.units["gpu__time_duration.sum"] == "ns"
    assert la.metrics["sm__warps_active.avg.pct_of_peak_sustained_active"] == 83.82


def test_error_lines_in_the_preamble_do_not_stop_the_reader() -> None:
    path = shared_path("ncu", "LearningNote4Dev__CUDA_gemm_output_share_tile.csv")
    r = read_ncu_csv(path)
    assert any(line.startswith("==ERROR==") for line in r.preamble)
    assert len(r.launches) == 3
    assert r.launches[0].metrics["dram__bytes.sum"] == 5_443_677_824.0


def test_wide_raw_page_with_units_row(tmp_path: Path) -> None:
    p = tmp_path / "raw.csv"
    p.write_text(
        '"ID","Kernel Name","Block Size","Grid Size","CC","dram__bytes.sum",'
        '"gpu__time_duration.sum","sm__cycles_elapsed.avg.per_second","launch__registers_per_thread"\n'
        '"","","","","","Kbyte","usecond","cycle/nsecond","register/thread"\n'
        '"0","k(int, float)","(128, 1, 1)","(10, 1, 1)","8.0","1,024.50","2.50","1.41","64"\n'
        '"1","k(int, float)","(128, 1, 1)","(10, 1, 1)","8.0","n/a","3.00","1.41","64"\n',
        encoding="utf-8",
    )
    r = read_ncu_csv(p)
    assert r.layout == "wide" and len(r.launches) == 2
    a, b = r.launches
    assert a.kernel_name == "k(int, float)"
    assert a.metrics["dram__bytes.sum"] == pytest.approx(1_024_500.0)  # Kbyte = 1000 B
    assert a.units["dram__bytes.sum"] == "byte"
    assert a.metrics["gpu__time_duration.sum"] == pytest.approx(2_500.0)  # ns
    assert a.metrics["sm__cycles_elapsed.avg.per_second"] == pytest.approx(1.41e9)
    assert a.metrics["launch__registers_per_thread"] == 64.0
    assert b.metrics["dram__bytes.sum"] is None


def test_swapped_locale_separators_are_read_once_per_file(tmp_path: Path) -> None:
    p = tmp_path / "de.csv"
    rows = [
        HEADER,
        _long_row(0, "k", "dram__bytes.sum", "byte", "5.318.969.728,00"),
        _long_row(0, "k", "gpu__time_duration.sum", "ns", "1.234"),
    ]
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    la = read_ncu_csv(p).launches[0]
    assert la.metrics["dram__bytes.sum"] == 5_318_969_728.0
    assert la.metrics["gpu__time_duration.sum"] == 1234.0


@pytest.mark.parametrize(
    ("unit", "value", "expected"),
    [
        ("byte", 3.0, (3.0, "byte")),
        ("Mbyte", 2.5, (2.5e6, "byte")),
        ("Gbyte", 1.0, (1e9, "byte")),
        ("usecond", 2.0, (2000.0, "ns")),
        ("msecond", 1.5, (1.5e6, "ns")),
        ("nsecond", 7.0, (7.0, "ns")),
        ("cycle/usecond", 1.5, (1.5e6, "cycle/s")),
        ("Gbyte/second", 2.0, (2e9, "byte/s")),
        ("Ghz", 1.98, (1.98e9, "cycle/s")),
        ("Kinst", 4.0, (4000.0, "inst")),
        ("%", 50.0, (50.0, "%")),
        ("", 32.0, (32.0, "")),
        ("register/thread", 64.0, (64.0, "register/thread")),
    ],
)
def test_units_are_converted_to_base_units(
    unit: str, value: float, expected: tuple[float, str]
) -> None:
    got = convert_unit(unit, value)
    assert got[1] == expected[1]
    assert got[0] == pytest.approx(expected[0])


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("134,221,568", 134_221_568.0),
        ("5,318,969,728.00", 5_318_969_728.0),
        ("83.82", 83.82),
        ("n/a", None),
        ("", None),
        ("1,2,3", None),
    ],
)
def test_number_strings(text: str, value: float | None) -> None:
    assert parse_number(text) == value


def test_not_an_ncu_export_is_an_input_error(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match='no header line starting with "ID"') as ei:
        read_ncu_csv(p)
    assert str(p) in str(ei.value)


def test_missing_columns_and_empty_export_are_input_errors(tmp_path: Path) -> None:
    p = tmp_path / "cols.csv"
    p.write_text('"ID","Kernel Name","Metric Name"\n"0","k","x"\n', encoding="utf-8")
    with pytest.raises(InputError, match="Metric Unit, Metric Value"):
        read_ncu_csv(p)
    q = tmp_path / "empty.csv"
    q.write_text(HEADER + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="no kernel launch"):
        read_ncu_csv(q)
    with pytest.raises(InputError, match="no such file"):
        read_ncu_csv(tmp_path / "absent.csv")


def test_tidy_table_has_one_row_per_launch_and_metric() -> None:
    path = shared_path("ncu", "LearningNote4Dev__CUDA_gemm_output_gemm.csv")
    _, rows = _raw_long(path)
    t = read_ncu_csv(path).table()
    assert len(t) == len(rows) == 45
    assert list(t.columns) == ["launch_id", "kernel", "metric", "unit", "value"]
