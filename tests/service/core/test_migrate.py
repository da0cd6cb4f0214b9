"""The migration runner of service/core/migrate.py (the migrations themselves are pinned in
test_migrations.py): what is wrong with a database's schema revision and the command that fixes
it, the revisions this kernelwatch knows, an upgrade that is quiet when asked and leaves Alembic's
logging as it was, and on SQLite foreign keys switched back on after a migration, which refuses
to finish while a row points at nothing."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from service.core.db import create_db_engine
from service.core.migrate import (
    MIGRATIONS_DIR,
    downgrade,
    head_revision,
    known_revisions,
    schema_problem,
    upgrade,
)


@pytest.fixture
def sqlite_engine(sqlite_template: Path, tmp_path: Path) -> Iterator[Engine]:
    """A SQLite file migrated to head: a copy of the session's template."""
    path = tmp_path / "kernelwatch.db"
    shutil.copy(sqlite_template, path)
    engine = create_db_engine(f"sqlite:///{path}")
    yield engine
    engine.dispose()


def revision_of(engine: Engine) -> str:
    with engine.connect() as conn:
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()


def test_the_known_revisions_are_the_migration_files_and_head_is_among_them() -> None:
    files = {p.name.split("_", 1)[0] for p in (MIGRATIONS_DIR / "versions").glob("0*.py")}
    assert known_revisions() == files
    assert head_revision() == max(files)


def test_a_schema_at_head_has_no_problem() -> None:
    assert schema_problem(head_revision(), head_revision()) is None


def test_an_empty_database_is_told_to_upgrade_and_which_revision_it_needs() -> None:
    said = schema_problem(None, "0019")
    assert said == (
        "the database has no kernelwatch schema (this kernelwatch needs revision 0019): "
        "run `kernelwatch db upgrade` first"
    )


def test_a_schema_behind_names_both_revisions_and_the_upgrade() -> None:
    said = schema_problem("0003", head_revision()) or ""
    assert said.startswith("the database's schema is at revision 0003, behind")
    assert said.endswith(f"{head_revision()}: run `kernelwatch db upgrade`")


def test_a_schema_from_a_newer_kernelwatch_is_never_told_to_upgrade() -> None:
    # Upgrading cannot help: the revision is unknown here, only the newer version can run it.
    said = schema_problem("0042_future", head_revision()) or ""
    assert "0042_future, which this kernelwatch does not know" in said
    assert "kernelwatch db upgrade" not in said
    assert "KERNELWATCH_DATABASE_URL" in said


def test_downgrade_and_upgrade_move_the_recorded_revision(sqlite_engine: Engine) -> None:
    head = head_revision()
    downgrade(sqlite_engine, "0017")
    assert revision_of(sqlite_engine) == "0017"
    assert schema_problem(revision_of(sqlite_engine), head) is not None
    upgrade(sqlite_engine)
    assert revision_of(sqlite_engine) == head


def test_a_quiet_upgrade_logs_no_alembic_info_and_restores_its_level(
    sqlite_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    alembic = logging.getLogger("alembic")
    before = alembic.level
    alembic.setLevel(logging.INFO)
    try:
        downgrade(sqlite_engine, "0018")
        caplog.clear()
        with caplog.at_level(logging.INFO):
            upgrade(sqlite_engine, quiet=True)
            assert not [r for r in caplog.records if r.name.startswith("alembic")]
            assert alembic.level == logging.INFO
            downgrade(sqlite_engine, "0018")
            caplog.clear()
            upgrade(sqlite_engine)
            assert any("0018 -> 0019" in r.getMessage() for r in caplog.records)
    finally:
        alembic.setLevel(before)


def test_foreign_keys_are_on_again_after_a_migration_on_sqlite(sqlite_engine: Engine) -> None:
    downgrade(sqlite_engine, "0018")
    upgrade(sqlite_engine)
    # The pool hands back the connection the migration used, with the pragma it left.
    with sqlite_engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1


def test_a_migration_that_leaves_a_row_pointing_at_nothing_fails(sqlite_engine: Engine) -> None:
    with sqlite_engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
        conn.execute(
            text(
                "INSERT INTO commits (id, repository_id, sha, parents, ancestors, author_name, "
                "author_email, message, committed_at) VALUES (1, 404, :sha, '[]', '[]', '', '', "
                "'', '2026-01-01 00:00:00+00:00')"
            ),
            {"sha": "a" * 40},
        )
        conn.commit()
        conn.exec_driver_sql("PRAGMA foreign_keys=ON")
    with pytest.raises(RuntimeError, match=r"migration left dangling references: .*commits"):
        upgrade(sqlite_engine)
    with sqlite_engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
