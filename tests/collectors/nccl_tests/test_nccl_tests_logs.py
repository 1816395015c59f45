# ruff: noqa: E501  (verbatim nccl-tests log lines are wider than 100 columns)
"""nccl-tests log parser: every shared log, rechecked row by row; old layouts; bad input.

References: the logs in ../shared/data/nccl-tests and their MANIFEST.md (rows, peak busbw,
footer average, rank counts), nccl-tests' formulas (algbw = size / time, busbw = algbw × factor),
and hand-computed rows below.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from collectors.errors import InputError
from collectors.nccl_tests import parse_nccl_tests_text, peak_table, read_nccl_tests
from tests.support.env import shared_path

LOGS = [
    "superbench_a100-sxm4-40gb_1node_8gpu_allreduce.log",
    "superbench_a100-sxm4-40gb_1node_8gpu_allgather.log",
    "superbench_a100-sxm4-40gb_1node_8gpu_alltoall.log",
    "superbench_a100-sxm4-40gb_1node_8gpu_broadcast.log",
    "superbench_a100-sxm4-40gb_1node_8gpu_reduce.log",
    "superbench_a100-sxm4-40gb_1node_8gpu_reducescatter.log",
    "aws_p4de_a100-80gb_2node_16gpu_efa_allreduce.txt",
    "aws_p5_h100_2node_16gpu_efa_allreduce.txt",
    "aws_p5_h100_eks_2node_16gpu_efa_allreduce_excerpt.txt",
    "aws_batch_p5_h100_allreduce.txt",
    "aws_p5en_h200_allreduce_excerpt.txt",
]

# nccl-tests bus factors, written out independently of collectors.nccl_formulas
FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def _manifest() -> dict[str, dict[str, str]]:
    """The MANIFEST table, keyed by file name."""
    text = shared_path("nccl-tests", "MANIFEST.md").read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    out = {}
    for ln in lines[2:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if len(cells) == len(header):
            out[cells[0]] = dict(zip(header, cells, strict=True))
    return out


def _raw_rows(path: Path) -> list[list[str]]:
    """Data lines of a log: first two tokens integers (the test's own, simpler reading)."""
    rows = []
    for line in path.read_text().splitlines():
        toks = line.split()
        if len(toks) > 10 and toks[0].isdigit() and toks[1].isdigit():
            rows.append(toks)
    return rows


def _decimals(tok: str) -> int:
    return len(tok.split(".")[1]) if "." in tok else 0


@pytest.mark.parametrize("name", LOGS)
def test_shared_log_parses_and_every_row_matches_size_over_time(name: str) -> None:
    path = shared_path("nccl-tests", name)
    (log,) = read_nccl_tests(path)
    raw = _raw_rows(path)
    assert len(log.rows) == 2 * len(raw)
    assert int(_manifest()[name]["rows"].split()[0]) == len(raw)
    assert log.collective is not None and log.nranks is not None
    factor = FACTOR[log.collective](log.nranks)
    # independent recheck: last 8 tokens = time algbw busbw wrong, twice
    for toks in raw:
        size = int(toks[0])
        for k in (0, 4):
            t_tok, a_tok, b_tok = toks[-8 + k], toks[-7 + k], toks[-6 + k]
            t_us = float(t_tok)
            rel_t = 0.5 * 10 ** -_decimals(t_tok) / t_us  # relative rounding of the time
            algbw = size / (t_us * 1e3)
            assert abs(float(a_tok) - algbw) <= 0.005 + algbw * rel_t * 1.001 + 1e-9, toks
            busbw = algbw * factor
            assert abs(float(b_tok) - busbw) <= 0.005 + busbw * rel_t * 1.001 + 1e-9, toks
    # the parser agrees: every row checkable and checked
    assert log.rows["algbw_ok"].notna().all() and log.rows["algbw_ok"].all()
    assert log.rows["busbw_ok"].notna().all() and log.rows["busbw_ok"].all()
    assert log.warnings == ()


@pytest.mark.parametrize("name", LOGS)
def test_peak_busbw_matches_manifest(name: str) -> None:
    (log,) = read_nccl_tests(shared_path("nccl-tests", name))
    peaks = peak_table([log])
    best = peaks.loc[peaks["busbw_gbps"].idxmax()]
    m = re.match(r"([\d.]+) \((\d+) GiB\)", _manifest()[name]["peak busbw GB/s (size)"])
    assert m is not None
    assert best["busbw_gbps"] == pytest.approx(float(m.group(1)), abs=1e-9)
    assert best["size_bytes"] == int(m.group(2)) * 2**30


@pytest.mark.parametrize(
    "name",
    [n for n in LOGS if "excerpt" not in n and "p4de" not in n and "aws_p5_h100_2node" not in n],
)
def test_footer_average_is_the_mean_of_every_parsed_busbw(name: str) -> None:
    # nccl-tests averages unrounded busbw over all rows and both placements; the printed values
    # are rounded to 0.005, so the mean of the parsed values lies within 0.005 of the footer
    (log,) = read_nccl_tests(shared_path("nccl-tests", name))
    assert log.avg_busbw_footer is not None
    assert abs(log.rows["busbw_gbps"].mean() - log.avg_busbw_footer) <= 0.005 + 1e-4


def test_rank_counts_come_from_devices_or_from_busbw_over_algbw() -> None:
    m = _manifest()
    for name in LOGS:
        (log,) = read_nccl_tests(shared_path("nccl-tests", name))
        ranks = m[name]["ranks"]
        if name.startswith("superbench"):
            assert (log.nranks, log.nranks_source) == (8, "devices")
            assert log.devices[0] == "A100-SXM4-40GB"
        elif ranks.isdigit():
            assert (log.nranks, log.nranks_source) == (int(ranks), "busbw/algbw")
    # logs whose MANIFEST leaves ranks open: 2(n-1)/n must reproduce every busbw; checked
    # above, and only one n does (p5en: 2·127/128 = 1.984375; 127 or 129 miss 369.86)
    (p5en,) = read_nccl_tests(shared_path("nccl-tests", "aws_p5en_h200_allreduce_excerpt.txt"))
    assert p5en.nranks == 128


def test_collective_is_inferred_when_neither_log_nor_file_names_it() -> None:
    for name, expected in (
        ("allreduce", "all_reduce"),
        ("reducescatter", "reduce_scatter"),
        ("broadcast", "broadcast"),
        ("reduce", "reduce"),
    ):
        text = shared_path(
            "nccl-tests", f"superbench_a100-sxm4-40gb_1node_8gpu_{name}.log"
        ).read_text()
        (log,) = parse_nccl_tests_text(text, "anonymous.log")
        assert (log.collective, log.collective_source) == (expected, "inferred")
    text = shared_path("nccl-tests", "superbench_a100-sxm4-40gb_1node_8gpu_allgather.log")
    (log,) = parse_nccl_tests_text(text.read_text(), "anonymous.log")
    assert log.collective is None
    assert "all_gather or all_to_all" in log.warnings[0]
    assert log.rows["busbw_ok"].all()  # the (n-1)/n family is still checked


def test_a_wrong_printed_digit_is_reported_with_its_line() -> None:
    path = shared_path("nccl-tests", "superbench_a100-sxm4-40gb_1node_8gpu_allreduce.log")
    text = path.read_text()
    lineno = next(i for i, ln in enumerate(text.splitlines(), 1) if "63896  134.44" in ln)
    (log,) = parse_nccl_tests_text(text.replace("134.44  235.26", "134.44  235.28"), str(path))
    assert not log.checked_ok
    assert log.warnings == (f"line {lineno}: printed busbw does not match size/time",)
    bad = log.rows[~log.rows["busbw_ok"]]
    assert bad[["line", "placement"]].values.tolist() == [[lineno, "out_of_place"]]


def test_launcher_prefixes_and_info_lines_are_ignored() -> None:
    text = shared_path("nccl-tests", "aws_p5_h100_2node_16gpu_efa_allreduce.txt").read_text()
    (plain,) = parse_nccl_tests_text(text, "a_allreduce.txt")
    prefixed = "\n".join(
        f"[1,0]<stdout>:{ln}" if i % 2 else f"0: {ln}" for i, ln in enumerate(text.splitlines())
    )
    noisy = prefixed.replace("\n", "\nnode-1:123:456 [0] NCCL INFO Channel 00/32 : 0 1\n", 3)
    (log,) = parse_nccl_tests_text(noisy, "a_allreduce.txt")
    assert log.rows.equals(plain.rows.assign(line=log.rows["line"]))
    assert log.checked_ok


# 2017 layout: "bytes N type op time algbw busbw res", time in ms.  Hand-computed rows for
# 8 ranks: 10,000,000 B / 0.961 ms = 10.406 GB/s -> "10.41"; × 2·7/8 = 18.21;
# 1,000,000 B / 0.105 ms = 9.524 -> "9.52"; × 1.75 = 16.67.
OLD_LOG = """\
# Using devices
#   Rank  0 on  sm-1 device  0 [0x02] Tesla P100-SXM2-16GB
#   Rank  7 on  sm-1 device  7 [0x8a] Tesla P100-SXM2-16GB
#                                                 out-of-place                    in-place
#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res
     1000000        250000   float     sum    0.105   9.52  16.67    5e-07    0.105   9.52  16.67    5e-07
    10000000       2500000   float     sum    0.961  10.41  18.21    5e-07    0.961  10.41  18.21    5e-07
"""


def test_2017_layout_reads_time_in_milliseconds() -> None:
    (log,) = parse_nccl_tests_text(OLD_LOG, "all_reduce_perf.log", nranks=8)
    assert log.layout == "2017" and log.time_unit == "ms"
    assert log.rows["time_us"].tolist() == pytest.approx([105.0, 105.0, 961.0, 961.0])
    assert log.rows["wrong"].tolist() == pytest.approx([5e-07] * 4)
    assert log.checked_ok and log.warnings == ()


# Two sections (nccl-tests ≥ 2.14 prints "# Collective test starting"); hand-computed:
# 2 ranks all_reduce: 1,048,576 B / 100.0 µs = 10.49 GB/s, busbw × 1 = 10.49;
# all_gather 2 ranks: 1,048,576 B / 80.00 µs = 13.11, busbw × 1/2 = 6.55 (6.5536).
TWO_SECTIONS = """\
# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1946 on node-a device  0 [0000:0f:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1947 on node-a device  1 [0000:10:00] NVIDIA H100 80GB HBM3
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    100.0   10.49   10.49      0    100.0   10.49   10.49      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 10.4858
#
# Collective test starting: all_gather_perf
# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#  Rank  0 Group  0 Pid   1946 on node-a device  0 [0000:0f:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1947 on node-a device  1 [0000:10:00] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        131072     float    none      -1    80.00   13.11    6.55      0    80.00   13.11    6.55      0
"""


def test_each_collective_test_section_becomes_its_own_log() -> None:
    logs = parse_nccl_tests_text(TWO_SECTIONS, "combined.log")
    assert [(lg.collective, lg.collective_source, lg.nranks) for lg in logs] == [
        ("all_reduce", "header", 2),
        ("all_gather", "header", 2),
    ]
    assert logs[0].version == "2.17.6" and logs[0].params["nGpus"] == "2"
    assert logs[0].avg_busbw_footer == pytest.approx(10.4858)
    assert all(lg.checked_ok for lg in logs)
    assert logs[1].rows["redop"].tolist() == ["none", "none"]


def test_json_output_of_nccl_tests_is_read_and_rechecked() -> None:
    # -J layout (nccl.md §1); 2 ranks all_reduce, 1 MiB in 100 µs: algbw 10.48576, busbw 10.48576
    text = (
        '{"results": [{"size": 1048576, "count": 262144, "type": "float", "redop": "sum", '
        '"root": -1, "out_of_place": {"time": 100.0, "alg_bw": 10.48576, "bus_bw": 10.48576, '
        '"nwrong": 0}, "in_place": {"time": 100.0, "alg_bw": 10.48576, "bus_bw": 20.0, '
        '"nwrong": 0}}], "average_bus_bandwidth": 15.24}'
    )
    (log,) = parse_nccl_tests_text(text, "all_reduce_perf.json", nranks=2)
    assert log.layout == "json" and log.collective == "all_reduce"
    assert log.rows["busbw_ok"].tolist() == [True, False]


def test_truncated_log_keeps_complete_rows_and_names_the_cut_line() -> None:
    path = shared_path("nccl-tests", "superbench_a100-sxm4-40gb_1node_8gpu_allreduce.log")
    text = path.read_text()
    cut = text[: text.rindex("8589934592") + 40]  # inside the last row
    (log,) = parse_nccl_tests_text(cut, str(path))
    assert len(log.rows) == 66
    assert log.checked_ok
    lineno = cut.count("\n") + 1
    assert log.warnings == (
        f"line {lineno}: row has 4 fields, expected at least 11 (truncated?); dropped",
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "no nccl-tests result rows"),
        ("==PROF== Connected to process 1\nID,Kernel Name,Metric Value\n1,foo,2\n", "no nccl"),
        ("# nThread 1 nGpus 8 minBytes 8\n#       size         count    type\n", "no nccl"),
        ('{"traceEvents": []}', "not nccl-tests -J output"),
        ("{not json", "not valid JSON"),
        ("1 2 3 4 5 6 7 8 9 10 11 12\n3 4 5 6 7 8 9 10 11 12 13 14\n", "not nccl-tests output"),
    ],
    ids=["empty", "ncu-csv", "header-only", "kineto-json", "broken-json", "numbers-table"],
)
def test_other_files_are_rejected_with_the_file_name(
    tmp_path: Path, content: str, message: str
) -> None:
    f = tmp_path / "input.log"
    f.write_text(content)
    with pytest.raises(InputError, match=message) as err:
        read_nccl_tests(f)
    assert str(f) in str(err.value)


def test_missing_and_binary_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_nccl_tests(tmp_path / "absent.log")
    b = tmp_path / "x.log"
    b.write_bytes(b"SQLite format 3\x00\x00\x01")
    with pytest.raises(InputError, match="binary file"):
        read_nccl_tests(b)


def test_wrong_elements_are_reported() -> None:
    text = TWO_SECTIONS.replace("10.49      0    100.0", "10.49      3    100.0")
    logs = parse_nccl_tests_text(text, "combined.log")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "10.49      3" in ln)
    assert logs[0].warnings == (f"line {line}: 3 wrong elements (data corruption)",)
    assert logs[0].checked_ok  # the bandwidth figures themselves are consistent


def test_peaks_are_kept_apart_by_rank_count() -> None:
    text = shared_path("nccl-tests", "aws_p5_h100_2node_16gpu_efa_allreduce.txt").read_text()
    batch = shared_path("nccl-tests", "aws_batch_p5_h100_allreduce.txt").read_text()
    logs = parse_nccl_tests_text(text, "a_allreduce.txt") + parse_nccl_tests_text(
        batch, "b_allreduce.txt"
    )
    peaks = peak_table(logs)
    big = peaks[peaks["size_bytes"] == 16 << 30].set_index("nranks")["busbw_gbps"]
    assert big.to_dict() == {8: 483.35, 16: 487.26}
