"""analyzers.serving loads its modules on first use: every public name resolves to the object
of the module it lives in, and importing one light module does not import the others."""

from __future__ import annotations

import importlib
import subprocess
import sys

import analyzers.serving as serving


def test_every_public_name_resolves_to_its_modules_object() -> None:
    assert set(serving.__all__) == set(serving._MODULE_OF)
    for name, module in serving._MODULE_OF.items():
        own = getattr(importlib.import_module(f"analyzers.serving.{module}"), name)
        assert getattr(serving, name) is own


def test_the_capture_module_imports_only_what_it_uses() -> None:
    """integrity and launch read capture's names: not the whole serving analysis."""
    code = (
        "import sys, analyzers.serving.capture; "
        "print(sorted(m for m in sys.modules if m.startswith('analyzers.serving.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['analyzers.serving.capture', 'analyzers.serving.ops']"
