"""Alembic environment of the run-history store; applied by :func:`reports.store.open_store`."""
