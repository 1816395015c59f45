"""Alembic environment of the run-history store.

:func:`reports.store.open_store` runs ``upgrade head`` programmatically and hands the open
connection (inside its own transaction, holding the store's migration lock) through
``config.attributes["connection"]``.  For hand use: ``alembic -x url=<URL> upgrade head`` with
``script_location`` pointing here.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection

from reports.store_models import Base

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        transactional_ddl=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Migrate the connection given by the caller, or the ``-x url=...`` database."""
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise SystemExit("pass the database with: alembic -x url=<SQLAlchemy URL> upgrade head")
    with create_engine(url).begin() as conn:
        _run(conn)


if context.is_offline_mode():  # pragma: no cover - offline SQL generation is not supported
    raise SystemExit("offline mode is not supported; run against a database")
run_migrations_online()
