"""Spilling a Trace's numeric columns to the Arrow cache: same tables bit for bit, columns mapped
from a file that no longer exists, refused on a file system held in memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from collectors.cache import spill
from collectors.cache.spill import (
    MODES,
    SPILL_ENV,
    TABLES,
    file_system_type,
    spill_mode,
    spill_trace,
    spill_wanted,
)
from collectors.errors import UsageError
from collectors.kineto import read_kineto
from collectors.model import Trace

SAMPLES = Path(__file__).resolve().parents[3] / "sample_traces"


@pytest.fixture(scope="module")
def trace() -> Trace:
    return read_kineto(SAMPLES / "synthetic_2rank" / "rank-0.json.gz")


def _numeric(df: pd.DataFrame) -> list[str]:
    """The int and float columns (what a spill maps), named here independently of the module."""
    return [c for c in df.columns if str(df[c].dtype) in ("int64", "int32", "float64", "float32")]


def test_spilled_tables_equal_the_originals_bit_for_bit(trace: Trace, tmp_path: Path) -> None:
    out = spill_trace(trace, tmp_path)
    assert out is not None
    spilled, n = out
    assert n > 0
    for t in TABLES:
        a, b = getattr(trace, t), getattr(spilled, t)
        pd.testing.assert_frame_equal(a, b, check_exact=True)
        assert list(a.dtypes) == list(b.dtypes)
        for c in _numeric(a):  # NaN payloads and signed zeros included
            assert a[c].to_numpy().tobytes() == b[c].to_numpy().tobytes()
    assert spilled.meta is trace.meta


def test_float_payloads_survive_a_spill(tmp_path: Path, trace: Trace) -> None:
    weird = np.array([np.nan, -0.0, np.inf, 1e-310], np.float64)
    weird[0] = np.frombuffer(np.uint64(0x7FF8_0000_DEAD_BEEF).tobytes(), np.float64)[0]
    counters = pd.DataFrame(
        {
            "name": pd.Categorical(["a"] * 4),
            "ts_ns": np.arange(4, dtype=np.int64),
            "value": weird,
            "device": np.full(4, -1, np.int64),
        }
    )
    import dataclasses

    out = spill_trace(dataclasses.replace(trace, counters=counters), tmp_path)
    assert out is not None
    assert out[0].counters["value"].to_numpy().tobytes() == weird.tobytes()


def test_spilled_columns_are_read_only_maps_of_an_unlinked_file(
    trace: Trace, tmp_path: Path
) -> None:
    out = spill_trace(trace, tmp_path)
    assert out is not None
    host = out[0].host
    assert list((tmp_path / "spill").iterdir()) == []  # unlinked once mapped
    start = host["start_ns"].to_numpy()
    assert not start.flags.writeable
    with pytest.raises(ValueError):
        start[0] = 1
    maps = Path("/proc/self/maps").read_text() if Path("/proc/self/maps").exists() else ""
    if maps:  # Linux: the column's pages belong to the deleted file's mapping
        address = start.__array_interface__["data"][0]
        owners = [
            line
            for line in maps.splitlines()
            if int(line.split()[0].split("-")[0], 16)
            <= address
            < int(line.split()[0].split("-")[1], 16)
        ]
        assert owners and str(tmp_path / "spill") in owners[0] and "(deleted)" in owners[0]
    # the other columns are the original objects' data, not copies
    for c in set(host.columns) - set(_numeric(host)):
        a, b = trace.host[c].array, host[c].array
        assert b is a or np.shares_memory(np.asarray(b), np.asarray(a)), c


def test_analyses_of_a_spilled_trace_equal_the_originals(trace: Trace, tmp_path: Path) -> None:
    from analyzers.kernel_summary import kernel_summary

    out = spill_trace(trace, tmp_path)
    assert out is not None
    pd.testing.assert_frame_equal(kernel_summary(trace), kernel_summary(out[0]), check_exact=True)


def test_a_spill_directory_in_memory_is_refused(
    trace: Trace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spill, "file_system_type", lambda p: "tmpfs")
    assert spill_trace(trace, tmp_path) is None


def test_an_unwritable_spill_directory_raises_oserror(trace: Trace, tmp_path: Path) -> None:
    root = tmp_path / "file"
    root.write_text("not a directory")
    with pytest.raises(OSError):
        spill_trace(trace, root)


def test_file_system_type_takes_the_longest_mount_point(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "30 22 0:26 / /dev/shm rw,nosuid shared:2 - tmpfs tmpfs rw\n"
        "31 22 0:27 / /home/a\\040b rw - tmpfs tmpfs rw\n"
        "32 22 0:28 / /home/a\\040b/disk rw shared:9 master:3 - xfs /dev/vdb rw\n"
    )
    assert file_system_type(Path("/dev/shm/x"), info) == "tmpfs"
    assert file_system_type(Path("/dev/shmx"), info) == "ext4"
    assert file_system_type(Path("/home/a b/c"), info) == "tmpfs"
    assert file_system_type(Path("/home/a b/disk/c"), info) == "xfs"
    assert file_system_type(Path("/var/x"), info) == "ext4"
    assert file_system_type(Path("/x"), tmp_path / "missing") is None


def test_auto_spills_when_the_analysis_would_not_fit() -> None:
    need = (spill.ANALYSIS_BYTES_PER_MODEL_BYTE - 1) * 100
    assert spill_wanted(100, need - 1)
    assert not spill_wanted(100, need)
    assert spill_wanted(100, 1 << 40, "always")
    assert not spill_wanted(100, 0, "never")


@pytest.mark.parametrize("value", ["", " ", *MODES, "ALWAYS"])
def test_spill_mode_reads_the_environment(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SPILL_ENV, value)
    assert spill_mode() == (value.strip().lower() or "auto")


def test_a_bad_spill_mode_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SPILL_ENV, "sometimes")
    with pytest.raises(UsageError, match="GPUSCOPE_SPILL must be one of auto, always, never"):
        spill_mode()
