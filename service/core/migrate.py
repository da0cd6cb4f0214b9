"""Apply Alembic migrations programmatically (CLI `db upgrade`, app start, tests)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def upgrade(engine: Engine, revision: str = "head", quiet: bool = False) -> None:
    """Migrate to `revision`; `quiet`: without Alembic's INFO lines (a command whose output is
    something else, a token, a job id, migrating the embedded database on the way)."""
    logger = logging.getLogger("alembic")
    level = logger.level
    if quiet:
        logger.setLevel(logging.WARNING)
    try:
        _migrate(engine, command.upgrade, revision)
    finally:
        logger.setLevel(level)


def downgrade(engine: Engine, revision: str) -> None:
    _migrate(engine, command.downgrade, revision)


def _migrate(engine: Engine, step: Callable[[Config, str], None], revision: str) -> None:
    config = alembic_config()
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        if sqlite:
            # Batch mode rebuilds a table (copy, DROP, rename). With foreign keys on, that DROP
            # would cascade and delete every dependent row. The pragma only changes outside a
            # transaction, hence before begin().
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        try:
            with connection.begin():
                if engine.dialect.name == "postgresql":
                    # A migration of a big history takes longer than a request may: the
                    # service's statement timeout is lifted for this transaction alone.
                    connection.exec_driver_sql("SET LOCAL statement_timeout = 0")
                config.attributes["connection"] = connection
                step(config, revision)
                if sqlite:
                    dangling = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
                    if dangling:
                        raise RuntimeError(f"migration left dangling references: {dangling[:5]}")
        finally:
            if sqlite:
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                connection.commit()


def head_revision() -> str:
    """The newest revision this kernelwatch's migrations know."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    return {s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()}


def schema_problem(current: str | None, head: str) -> str | None:
    """What is wrong with a database whose schema is at `current` for this kernelwatch (whose
    newest revision is `head`), and the command that fixes it; None when they agree."""
    if current == head:
        return None
    if current is None:
        return (
            f"the database has no kernelwatch schema (this kernelwatch needs revision {head}): "
            "run `kernelwatch db upgrade` first"
        )
    if current not in known_revisions():
        return (
            f"the database's schema is at revision {current}, which this kernelwatch does not "
            f"know (it needs {head}): a newer kernelwatch migrated it; run that version, or "
            "point KERNELWATCH_DATABASE_URL at another database"
        )
    return (
        f"the database's schema is at revision {current}, behind this kernelwatch's {head}: "
        "run `kernelwatch db upgrade`"
    )
