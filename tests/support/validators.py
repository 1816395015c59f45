"""Validators that live in the test extra (skipped locally when absent, required in CI)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from tests.support.env import require_service

JUNIT_XSD = Path(__file__).resolve().parents[1] / "fixtures" / "junit.xsd"
"""The Jenkins xUnit plugin's JUnit schema."""


def xmlschema_module() -> ModuleType:
    """The ``xmlschema`` validator (test extra): skips locally, fails under CI=true."""
    try:
        import xmlschema
    except ModuleNotFoundError:
        require_service("xmlschema", False, "pip install xmlschema (in the test extra)")
    return xmlschema
