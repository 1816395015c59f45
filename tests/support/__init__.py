"""Shared test helpers (builders, private readers of raw trace files)."""
