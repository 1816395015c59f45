"""Alembic revisions of the run-history store (one file per schema change)."""
