"""The cache keys' source fingerprint covers a package's subpackages: editing a module of
``collectors/kineto/`` (a reader's stage) must change the key, or old parses would be served."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from collectors.cache import source_fingerprint


def test_editing_a_module_of_a_subpackage_changes_the_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "fp_pkg"
    (pkg / "stage").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "stage" / "__init__.py").write_text("")
    module = pkg / "stage" / "reader.py"
    module.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = source_fingerprint("fp_pkg")
    module.write_text("X = 2\n")
    source_fingerprint.cache_clear()
    try:
        assert source_fingerprint("fp_pkg") != before
    finally:
        source_fingerprint.cache_clear()
        sys.modules.pop("fp_pkg", None)
