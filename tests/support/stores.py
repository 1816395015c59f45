"""Run-history store locations for tests: a fresh SQLite file, or a fresh PostgreSQL schema.

PostgreSQL: ``GPUSCOPE_TEST_PG_URL`` (``.ci/run`` exports it); each test gets a fresh schema.
Without a server the PostgreSQL cases skip locally and fail under ``CI=true``.  The fixture is
registered for every test module by ``tests/conftest.py``'s ``pytest_plugins``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.support.env import require_service

PG_URL = os.environ.get("GPUSCOPE_TEST_PG_URL")


def pg_problem() -> str | None:
    """Why the PostgreSQL tests cannot run (None: they can)."""
    if not PG_URL:
        return "GPUSCOPE_TEST_PG_URL is not set (.ci/run starts a server and sets it)"
    try:
        eng = create_engine(PG_URL, connect_args={"connect_timeout": 5})
        with eng.connect() as c:
            c.execute(text("select 1"))
        eng.dispose()
    except Exception as err:  # any failure to connect means: no server for these tests
        return f"cannot connect to GPUSCOPE_TEST_PG_URL: {type(err).__name__}"
    return None


def pg_schema_url() -> Iterator[str]:
    """A URL whose search_path is a fresh, empty schema (dropped afterwards)."""
    problem = pg_problem()
    require_service("postgresql", problem is None, problem or "")
    assert PG_URL is not None
    schema = f"gs_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_URL)
    with admin.begin() as c:
        c.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as c:
            c.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """A fresh store location on each backend (SQLite: a file path, as users pass it)."""
    if request.param == "sqlite":
        yield str(tmp_path / "history.db")
    else:
        yield from pg_schema_url()
