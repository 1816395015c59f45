"""The repository's scripts (``benchmarks/*.py``, ``sample_traces/*.py``) imported as modules
by their path, for tests of their functions."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType


@cache
def load_script(path: Path) -> ModuleType:
    """The script at *path* as a module named after its file (loaded once; registered in
    ``sys.modules`` so that its dataclasses resolve their annotations)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
