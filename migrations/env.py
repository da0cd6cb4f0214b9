"""Alembic environment: the URL comes from the caller's connection, -x url=, or the settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from service.core.db import create_db_engine
from service.core.settings import Settings
from service.models import Base

config = context.config
target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things in place; batch mode rebuilds the table instead.
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    url = context.get_x_argument(as_dictionary=True).get("url") or (
        Settings().effective_database_url
    )
    context.configure(
        url=url, target_metadata=target_metadata, literal_binds=True, render_as_batch=True
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or (
        Settings().effective_database_url
    )
    engine = create_db_engine(url)
    try:
        with engine.connect() as conn:
            _configure(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
