"""service/models/base.py against the migrated database: every primary key, foreign key and
unique constraint carries the name the naming convention gives it (what lets Alembic alter them
on SQLite and PostgreSQL); every datetime column is a UTCDateTime, which refuses a naive
datetime, stores an aware one as UTC and reads it back aware in UTC (SQLite keeps no offset of
its own); JSON columns are JSONB on PostgreSQL except the whole-JSON kind; and importing the
package registers every table the migrations make."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import DateTime, Engine, inspect, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import Session

from service.models import Base, Job, Repository
from service.models.base import NAMING_CONVENTION, JSONType, UTCDateTime, WholeJSON, utcnow
from tests.service.models.conftest import added


def test_the_package_registers_every_table_the_migrations_make(engine: Engine) -> None:
    made = set(inspect(engine).get_table_names()) - {"alembic_version"}
    assert set(Base.metadata.tables) == made


def test_the_metadata_names_constraints_by_the_convention() -> None:
    assert Base.metadata.naming_convention == NAMING_CONVENTION


def test_every_constraint_in_the_database_has_its_conventional_name(engine: Engine) -> None:
    inspector = inspect(engine)
    wrong = []
    for table in Base.metadata.tables:
        names = {inspector.get_pk_constraint(table)["name"]: f"pk_{table}"}
        for fk in inspector.get_foreign_keys(table):
            names[fk["name"]] = f"fk_{table}_{fk['constrained_columns'][0]}_{fk['referred_table']}"
        for uq in inspector.get_unique_constraints(table):
            names[uq["name"]] = f"uq_{table}_{'_'.join(uq['column_names'])}"
        wrong += [(table, got, want) for got, want in names.items() if got != want]
    assert wrong == []


def test_unique_columns_are_named_constraints_not_anonymous_indexes(engine: Engine) -> None:
    # unique=True on a column must reach the database as uq_<table>_<column>.
    inspector = inspect(engine)
    got = {
        u["name"] for t in ("repositories", "runners") for u in inspector.get_unique_constraints(t)
    }
    assert got == {"uq_repositories_name", "uq_runners_name", "uq_runners_token_hash"}


def test_every_datetime_column_is_a_utc_datetime() -> None:
    columns = [c for t in Base.metadata.tables.values() for c in t.columns]
    utc = [c for c in columns if isinstance(c.type, UTCDateTime)]
    bare = [f"{c.table.name}.{c.name}" for c in columns if isinstance(c.type, DateTime)]
    assert len(utc) > 20 and bare == []


def test_a_naive_datetime_is_refused(session: Session) -> None:
    with pytest.raises(StatementError, match="naive datetime") as caught:
        added(session, Repository(name="a/b", created_at=datetime(2026, 1, 1, 12)))
    assert isinstance(caught.value.orig, ValueError)
    session.rollback()


def test_an_aware_datetime_reads_back_aware_in_utc(session: Session, engine: Engine) -> None:
    noon_at_plus_two = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    row = added(session, Repository(name="a/b", created_at=noon_at_plus_two))
    session.commit()
    session.expire_all()
    read = session.get(Repository, row.id).created_at
    assert read == datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert read.tzinfo is UTC  # UTC itself, not the +02:00 it was written in
    if engine.dialect.name == "sqlite":
        # SQLite keeps no offset: the UTC wall time is what is stored.
        raw = session.execute(text("SELECT created_at FROM repositories")).scalar_one()
        assert raw.startswith("2026-01-01 10:00:00")


def test_a_missing_time_reads_back_none(session: Session, repo: Repository) -> None:
    job = added(session, Job(repository_id=repo.id, commit_sha="a" * 40, branch="main"))
    session.commit()
    session.expire_all()
    assert session.get(Job, job.id).lease_expires_at is None


def test_the_default_time_is_now_in_utc(session: Session) -> None:
    before = datetime.now(UTC)
    row = added(session, Repository(name="a/b"))
    assert before <= row.created_at <= datetime.now(UTC)
    assert utcnow().tzinfo is UTC


def test_json_is_jsonb_on_postgresql_but_whole_json_is_kept_as_written() -> None:
    pg = postgresql.dialect()
    assert isinstance(JSONType.dialect_impl(pg), JSONB)
    assert not isinstance(WholeJSON.dialect_impl(pg), JSONB)
    assert not isinstance(JSONType.dialect_impl(sqlite.dialect()), JSONB)
