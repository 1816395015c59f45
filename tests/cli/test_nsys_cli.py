"""`gpuscope analyze FILE.sqlite --json out.json` on every shared nsys export.

Each export is analysed on its own in-process (``cli.main.main``), and all of them together in
one ``gpuscope`` subprocess (exit 0, no traceback, one rank per export in file-name order).
The JSON's kernel summary is checked against plain SQL on the same file.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from tests.support.env import REPO, SHARED_DATA, shared_path

FILES = sorted((SHARED_DATA / "nsys").glob("*.sqlite"))


def _kernel_names_by_total(path: Path) -> list[tuple[str, int, int]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
            return []
        return con.execute(
            "SELECT s.value, COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.demangledName GROUP BY 1 ORDER BY 3 DESC, 2, 1"
        ).fetchall()
    finally:
        con.close()


def _check_rank(rank: dict, path: Path) -> None:
    got = [(k["name"], k["count"], k["total_ns"]) for k in rank["kernel_summary"]]
    assert got == _kernel_names_by_total(path)
    assert rank["device"]["vendor"] == "NVIDIA"


@pytest.mark.parametrize(
    "name",
    [f.name for f in FILES] or ["no-shared-data"],
    ids=lambda n: n.split("__")[1] if "__" in n else n,
)
def test_analyze_json_on_each_shared_export(name: str, tmp_path: Path) -> None:
    path = shared_path("nsys", name)
    out = tmp_path / "out.json"
    assert main(["analyze", str(path), "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    (rank,) = summary["ranks"]
    _check_rank(rank, path)


def test_gpuscope_analyze_subprocess_on_all_shared_exports(tmp_path: Path) -> None:
    shared_path("nsys")
    files = sorted(FILES, key=lambda p: p.name)  # no natural-order ties among these names
    out = tmp_path / "all.json"
    r = subprocess.run(
        [sys.executable, "-m", "cli.main", "analyze", *map(str, files), "--json", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    summary = json.loads(out.read_text())
    assert [x["rank"] for x in summary["ranks"]] == list(range(len(files)))
    for rank, path in zip(summary["ranks"], files, strict=True):
        _check_rank(rank, path)
