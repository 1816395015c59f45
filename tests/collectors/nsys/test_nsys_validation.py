"""The Nsight Systems reader's checks (docs/reliability.md): rows with impossible or non-integer
times are rejected with a note per export, wrong-typed cells are unknown, names whose
``StringIds`` entry is missing are named ``<missing string N>``, a corrupt page is one input
error — never a wrong number, an internal error or a hang.

The exports are small hand-made ones with the real table layout (``tests/support/nsys_exports``:
four 10 µs gemm kernels 100 µs apart, their launch calls, one NVTX range, two memory events),
broken with one SQL statement each.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from collectors.errors import InputError
from collectors.nsys import read_nsys
from tests.support.cli_run import check_contract, rank_notes, run_cli
from tests.support.env import shared_path
from tests.support.nsys_exports import KERNEL, MEMORY, NVTX, RUNTIME, relax, small_export, sql


def _analyze(p: Path) -> tuple[Any, Any]:
    out = p.with_suffix(".json")
    res = run_cli(["analyze", p, "--json", out, "--no-cache"])
    return res, check_contract(res, [p], out)


def _gemm(summary: Any) -> dict[str, Any]:
    (row,) = summary["ranks"][0]["kernel_summary"]
    return row


def test_the_unbroken_export_has_four_kernels(tmp_path: Path) -> None:
    res, summary = _analyze(small_export(tmp_path / "ok.sqlite"))
    assert res.rc == 0 and not rank_notes(summary)
    row = _gemm(summary)
    assert (row["count"], row["total_ns"], row["min_ns"]) == (4, 40_000, 10_000)


@pytest.mark.parametrize(
    ("statement", "null", "reason"),
    [
        (f"UPDATE {KERNEL} SET end = start - 5000 WHERE correlationId = 2", False, "end before"),
        (f"UPDATE {KERNEL} SET start = NULL WHERE correlationId = 2", True, "NULL"),
        (f"UPDATE {KERNEL} SET end = NULL WHERE correlationId = 2", True, "NULL"),
        (f"UPDATE {KERNEL} SET start = 'abc' WHERE correlationId = 2", False, "NULL"),
        (f"UPDATE {KERNEL} SET end = 1.5 WHERE correlationId = 2", False, "NULL"),
        (f"UPDATE {KERNEL} SET start = -5 WHERE correlationId = 2", False, "NULL"),
        (f"UPDATE {KERNEL} SET end = 9223372036854775807 WHERE correlationId = 2", False, "2^62"),
        (f"UPDATE {KERNEL} SET deviceId = 'gpu' WHERE correlationId = 2", False, "device"),
    ],
    ids=[
        "end-before-start",
        "null-start",
        "null-end",
        "text-start",
        "real-end",
        "negative-start",
        "end-int64-max",
        "text-device",
    ],
)
def test_a_bad_kernel_row_is_rejected_with_a_note(
    tmp_path: Path, statement: str, null: bool, reason: str
) -> None:
    p = small_export(tmp_path / "t.sqlite")
    if null:
        relax(p, KERNEL)
    res, summary = _analyze(sql(p, statement))
    assert res.rc == 0
    row = _gemm(summary)
    assert (row["count"], row["total_ns"], row["min_ns"]) == (3, 30_000, 10_000)
    (note,) = rank_notes(summary)
    assert note.startswith(f"rejected 1 of 4 rows of {KERNEL}") and reason in note, note


def test_bad_api_calls_and_nvtx_ranges_are_rejected_too(tmp_path: Path) -> None:
    p = small_export(tmp_path / "t.sqlite")
    sql(
        p,
        f"UPDATE {RUNTIME} SET start = 'x' WHERE correlationId = 1",
        f"UPDATE {RUNTIME} SET end = start - 1 WHERE correlationId = 3",
        f"UPDATE {NVTX} SET start = 'abc'",
    )
    res, summary = _analyze(p)
    assert res.rc == 0
    t = read_nsys(p)[0]
    assert len(t.host) == 2 and len(t.annotations) == 0
    notes = rank_notes(summary)
    assert any(n.startswith(f"rejected 2 of 4 rows of {RUNTIME}") for n in notes), notes
    assert any(n.startswith(f"rejected 1 of 1 rows of {NVTX}") for n in notes), notes


@pytest.mark.parametrize(
    "statement",
    [
        f"UPDATE {NVTX} SET globalTid = 'abc'",
        f"UPDATE {NVTX} SET domainId = 'x'",
        f"UPDATE {NVTX} SET eventType = 'x'",
        f"UPDATE {NVTX} SET text = NULL, textId = 999",
        f"UPDATE {RUNTIME} SET globalTid = -99",
        f"UPDATE {KERNEL} SET globalPid = 'zz'",
        f"UPDATE {KERNEL} SET correlationId = 'c' WHERE correlationId = 2",
        f"UPDATE {KERNEL} SET gridX = -7, registersPerThread = 'r' WHERE correlationId = 2",
        "UPDATE TARGET_INFO_GPU SET smCount = 'x', totalMemory = -1",
        "UPDATE TARGET_INFO_GPU SET id = 'gpu'",
        "INSERT INTO PROCESSES VALUES ('x', 'y', 3)",
        "INSERT INTO ThreadNames VALUES (999, 0, 'abc')",
        "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = 'x'",
        "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = 1e300",
        "UPDATE StringIds SET value = x'00ff' WHERE id = 1",
        f"UPDATE {MEMORY} SET start = 'x'",
        f"UPDATE {MEMORY} SET bytes = -5",
    ],
    ids=[
        "nvtx-text-tid",
        "nvtx-text-domain",
        "nvtx-text-type",
        "nvtx-dangling-text-id",
        "negative-global-tid",
        "text-global-pid",
        "text-correlation",
        "negative-grid-text-registers",
        "text-sm-count",
        "text-gpu-id",
        "text-process-row",
        "text-thread-row",
        "text-session-start",
        "huge-session-start",
        "blob-string",
        "memory-text-start",
        "memory-negative-bytes",
    ],
)
def test_odd_cells_are_unknown_or_rejected_never_an_error(tmp_path: Path, statement: str) -> None:
    p = sql(small_export(tmp_path / "t.sqlite"), statement)
    res, summary = _analyze(p)
    assert res.rc == 0
    for t in read_nsys(p):
        g = t.gpu
        assert ((g["end_ns"] >= g["start_ns"]) & (g["start_ns"] >= 0)).all()
        for col in ("grid_x", "registers_per_thread", "device", "correlation"):
            assert (g[col] >= -1).all(), col
        assert t.meta.base_time_ns is None or 0 <= t.meta.base_time_ns < 2**63
        for d in t.meta.devices:
            assert d.sm_count is None or d.sm_count > 0
            assert d.total_memory_bytes is None or d.total_memory_bytes > 0
        assert all(isinstance(n, str) and not n.startswith("b'") for n in g["name"])
    assert summary["ranks"]


def test_kernel_names_missing_from_string_ids_are_named_by_their_id(tmp_path: Path) -> None:
    p = sql(
        small_export(tmp_path / "t.sqlite"),
        f"UPDATE {KERNEL} SET demangledName = 999, shortName = 998 WHERE correlationId = 2",
        f"UPDATE {RUNTIME} SET nameId = 997 WHERE correlationId = 3",
    )
    res, summary = _analyze(p)
    assert res.rc == 0
    t = read_nsys(p)[0]
    assert sorted(set(t.gpu["name"])) == ["<missing string 999>", "gemm(float*)"]
    assert "<missing string 997>" in set(t.host["name"])
    assert any("StringIds" in n for n in rank_notes(summary))


def test_missing_strings_in_a_real_export_give_named_kernels(tmp_path: Path) -> None:
    """Half the StringIds rows deleted: every kernel still has a name (was an internal
    KeyError in the occupancy section, whose groups dropped the NaN names)."""
    p = tmp_path / "t.sqlite"
    shutil.copyfile(
        shared_path(
            "nsys",
            "nsys2023.3.1.92__SC23_Programming-Your-GPU-with-OpenMP_Tutorial__report3.sqlite",
        ),
        p,
    )
    p.chmod(0o644)
    sql(p, "DELETE FROM StringIds WHERE id % 2 = 0")
    res, _ = _analyze(p)
    assert res.rc == 0
    for t in read_nsys(p):
        assert t.gpu["name"].notna().all() and t.host["name"].notna().all()


def test_an_export_with_no_usable_row_is_one_input_error(tmp_path: Path) -> None:
    p = sql(
        small_export(tmp_path / "t.sqlite"),
        f"UPDATE {KERNEL} SET end = start - 1",
        f"UPDATE {RUNTIME} SET start = -1",
        f"UPDATE {NVTX} SET start = 'x'",
        f"DELETE FROM {MEMORY}",
    )
    res, _ = _analyze(p)
    assert res.rc == 2 and "no usable rows" in res.err
    with pytest.raises(InputError, match="rejected"):
        read_nsys(p)


def test_corrupt_pages_are_one_input_error(tmp_path: Path) -> None:
    """Random pages of a real export overwritten: exit 0, or exit 2 naming the file (the
    ADBC reader raised OSError 'database disk image is malformed' as an internal error)."""
    src = shared_path("nsys", "nsys2024.6.2.25__Fuser__report2.sqlite").read_bytes()
    page = int.from_bytes(src[16:18], "big")
    rng = random.Random(26)
    codes = set()
    for k in range(12):
        data = bytearray(src)
        at = rng.randrange(1, len(data) // page) * page
        data[at : at + 8] = b"\xff" * 8
        p = tmp_path / f"c{k}.sqlite"
        p.write_bytes(bytes(data))
        res, _ = _analyze(p)
        codes.add(res.rc)
    assert codes <= {0, 2}
