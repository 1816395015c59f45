"""Every third-party module the product packages import is a declared dependency or extra.

Reads the imports of ``profiler``, ``collectors``, ``analyzers``, ``reports`` and ``cli`` with
``ast`` (module level and inside functions: a lazy import is still a path a user reaches), maps
each top-level module to the distribution that installs it, and checks that distribution
against ``pyproject.toml``'s ``dependencies`` and ``optional-dependencies``.  A requirement
with extras (``dask[distributed]``) also declares what those extras pull in.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("profiler", "collectors", "analyzers", "reports", "cli")
# Modules of extras that cannot be installed on this machine (GPU-only, or another Python),
# so ``packages_distributions`` cannot name their distribution: module → distribution.
NOT_INSTALLABLE_HERE = {"cupti": ["cupti-python"], "tomli": ["tomli"]}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name_extras(req: str) -> tuple[str, list[str]]:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", req)
    assert m, req
    extras = [e.strip() for e in (m.group(2) or "").split(",") if e.strip()]
    return _norm(m.group(1)), extras


def _extra_requirements(dist: str, extras: list[str]) -> set[str]:
    """Distributions that ``dist[extras]`` pulls in (from the installed metadata)."""
    try:
        reqs = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return set()
    out = set()
    for r in reqs:
        if ";" not in r:
            continue
        spec, marker = r.split(";", 1)
        if any(re.search(rf"extra\s*==\s*['\"]{re.escape(e)}['\"]", marker) for e in extras):
            out.add(_req_name_extras(spec)[0])
    return out


def declared_distributions(pyproject: Path) -> set[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    reqs = list(project.get("dependencies", []))
    for group in project.get("optional-dependencies", {}).values():
        reqs.extend(group)
    declared: set[str] = set()
    for r in reqs:
        name, extras = _req_name_extras(r)
        declared.add(name)
        if extras:
            declared |= _extra_requirements(name, extras)
    return declared


def imported_top_level_modules(root: Path) -> dict[str, list[str]]:
    """Top-level module → ``file:line`` of each absolute import in the product packages."""
    found: dict[str, list[str]] = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for n in names:
                    where = f"{path.relative_to(root)}:{node.lineno}"
                    found.setdefault(n.split(".")[0], []).append(where)
    return found


def undeclared_imports(root: Path) -> list[str]:
    declared = declared_distributions(root / "pyproject.toml")
    first_party = set(PACKAGES)
    providers = metadata.packages_distributions()
    problems = []
    for mod, where in sorted(imported_top_level_modules(root).items()):
        if mod in first_party or mod in sys.stdlib_module_names or mod == "__future__":
            continue
        dists = providers.get(mod) or NOT_INSTALLABLE_HERE.get(mod, [])
        if not dists:
            problems.append(
                f"{mod} (imported at {where[0]}) is not installed by any declared distribution"
            )
        elif not any(_norm(d) in declared for d in dists):
            problems.append(
                f"{mod} (from {', '.join(dists)}; imported at {where[0]}) is not "
                "declared in pyproject.toml"
            )
    return problems


def test_every_third_party_import_is_declared() -> None:
    assert undeclared_imports(REPO) == []


def test_an_undeclared_import_is_caught(tmp_path: Path) -> None:
    """The check can fail: a copy of pyproject without ``msgspec`` flags every msgspec import."""
    text = (REPO / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(text.replace('"msgspec>=0.18",', ""))
    for pkg in PACKAGES:
        (tmp_path / pkg).symlink_to(REPO / pkg)
    problems = undeclared_imports(tmp_path)
    assert any(p.startswith("msgspec ") for p in problems), problems


def test_a_module_nobody_installs_is_caught(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
    (tmp_path / "cli" / "x.py").write_text("def f():\n    import not_a_real_module_xyz\n")
    problems = undeclared_imports(tmp_path)
    assert problems == [
        "not_a_real_module_xyz (imported at cli/x.py:2) is not installed by any declared "
        "distribution"
    ]


@pytest.mark.parametrize("pkg", PACKAGES)
def test_each_package_ships_py_typed(pkg: str) -> None:
    assert (REPO / pkg / "py.typed").is_file()
