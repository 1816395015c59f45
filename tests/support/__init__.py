"""Shared test helpers (builders of hand-made traces and summaries)."""
