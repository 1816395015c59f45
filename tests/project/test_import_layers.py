"""The layering contracts of ``pyproject.toml`` (docs/architecture.md "Rules") hold: import-linter
builds the import graph of the five packages and checks every contract."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tests.support.env import REPO, require_service

CONTRACTS = {"layers", "analyzers-read-no-files", "acyclic"}


def _config() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]


def test_the_contracts_of_the_architecture_page_are_configured() -> None:
    cfg = _config()
    assert set(cfg["root_packages"]) == {"profiler", "collectors", "analyzers", "reports", "cli"}
    by_id = {c["id"]: c for c in cfg["contracts"]}
    assert set(by_id) == CONTRACTS
    assert by_id["layers"]["layers"] == ["cli", "profiler", "reports", "analyzers", "collectors"]
    forbidden = set(by_id["analyzers-read-no-files"]["forbidden_modules"])
    assert {"collectors.kineto", "collectors.nsys", "collectors.load"} <= forbidden
    assert {"collectors.peaks", "collectors.ncu", "collectors.summary.reader"} <= forbidden


def test_lint_imports_keeps_every_contract() -> None:
    require_service(
        "import-linter",
        importlib.util.find_spec("importlinter") is not None,
        "pip install import-linter (in the test extra)",
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
         "sys.exit(lint_imports_command())", "--no-cache"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in proc.stdout
