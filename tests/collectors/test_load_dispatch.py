"""Input dispatch: run directories, SQLite sniffing, empty and missing inputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from collectors.errors import InputError
from collectors.load import expand_inputs, load_traces
from tests.support.env import SAMPLES


def test_run_directory_is_read_through_its_traces_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "synthetic_2rank", run / "traces")
    (run / "meta.json").write_text('{"schema_version": 1}', encoding="utf-8")
    (run / "summary.json").write_text('{"schema_version": 1, "ranks": []}', encoding="utf-8")
    kineto, sqlite, reps = expand_inputs([run])
    assert sorted(p.name for p in kineto) == ["rank-0.json.gz", "rank-1.json.gz"]
    assert not sqlite and not reps
    assert [t.rank for t in load_traces([run])] == [0, 1]


def test_sqlite_file_is_recognised_by_content_whatever_its_name(tmp_path: Path) -> None:
    import sqlite3

    f = tmp_path / "export.bin"
    sqlite3.connect(f).execute("create table t (x)").connection.commit()
    kineto, sqlite, _ = expand_inputs([f])
    assert sqlite == [f] and not kineto


def test_directory_without_traces_and_missing_path_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="holds no trace"):
        expand_inputs([tmp_path])
    with pytest.raises(InputError, match="no such file"):
        expand_inputs([tmp_path / "absent.json"])
