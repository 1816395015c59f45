"""The code fingerprint that keys cached results covers subpackages (reports/summary/sections/,
collectors/cache/, analyzers/collectives/): an edit there must invalidate what old code built."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.cache import hashing


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "fp_pkg"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "deeper" / "section.py").write_text("X = 1\n")
    (root / "data" / "table.toml").write_text("a = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return root


def _fingerprint() -> str:
    hashing.source_fingerprint.cache_clear()
    return hashing.source_fingerprint("fp_pkg")


@pytest.mark.parametrize(
    "edit", ["sub/deeper/section.py", "data/table.toml", "sub/new_module.py", "__init__.py"]
)
def test_an_edit_anywhere_in_the_package_changes_the_fingerprint(package: Path, edit: str) -> None:
    before = _fingerprint()
    (package / edit).write_text("# edited\n")
    assert _fingerprint() != before


def test_compiled_files_do_not_change_the_fingerprint(package: Path) -> None:
    before = _fingerprint()
    cache = package / "sub" / "__pycache__"
    cache.mkdir()
    (cache / "section.cpython-312.pyc").write_bytes(b"\0")
    assert _fingerprint() == before
