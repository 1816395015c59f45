"""Shared test helpers (importable as ``support``; ``tests/`` is on the path via conftest)."""
