"""The test tree mirrors the packages: no flat ``tests/test_*.py``, unique basenames (pytest's
default import mode needs them), no ``__init__.py`` in the mirror folders (it would shadow the
top-level packages), and no test module imports another test module or ``conftest`` (shared
helpers live in ``tests/support/``)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from tests.support.env import REPO

TESTS = REPO / "tests"
PACKAGES = {"tests.support", "tests.fakes"}
"""Helper packages of the test tree (they have an ``__init__.py``; test folders do not)."""


def _test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def _imported(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_no_test_file_sits_flat_in_tests() -> None:
    assert [p.name for p in TESTS.glob("test_*.py")] == []


def test_test_basenames_are_unique() -> None:
    names = Counter(p.name for p in _test_files())
    assert [n for n, k in names.items() if k > 1] == []


def test_only_the_helper_packages_have_an_init() -> None:
    inits = {
        p.parent.relative_to(REPO).as_posix().replace("/", ".") for p in TESTS.rglob("__init__.py")
    }
    assert {i for i in inits if not any(i == p or i.startswith(p + ".") for p in PACKAGES)} == set()


def test_no_test_module_imports_another_or_conftest() -> None:
    bad = {}
    for path in [*_test_files(), *(TESTS / "support").rglob("*.py")]:
        names = {
            n for n in _imported(path)
            if n.split(".")[-1].startswith("test_") or n.split(".")[-1] == "conftest"
            or n in ("builders", "support", "fakes") or n.startswith(("support.", "fakes."))
        }  # fmt: skip
        if names:
            bad[path.relative_to(REPO).as_posix()] = sorted(names)
    assert bad == {}, "import helpers from tests.support.* (and tests.fakes.*), not from these"
