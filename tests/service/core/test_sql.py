"""The dialect-dependent SQL of service/core/sql.py: `among` is an IN list on SQLite, whose
rows it must select exactly, and one array parameter on PostgreSQL whatever the number of
values; `dialect_insert` gives each database's INSERT with its ON CONFLICT clause, which on
SQLite must really skip a duplicate row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from service.core.db import create_db_engine
from service.core.sql import among, dialect_insert

METADATA = MetaData()
KERNELS = Table(
    "kernels",
    METADATA,
    Column("id", Integer, primary_key=True),
    Column("name", String(50), nullable=False, unique=True),
)


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'sql.db'}")
    METADATA.create_all(engine)
    with engine.begin() as conn:
        conn.execute(KERNELS.insert(), [{"id": i, "name": f"k{i}"} for i in range(1, 11)])
    yield engine
    engine.dispose()


@pytest.fixture
def postgres_session() -> Iterator[Session]:
    # An engine never connected: the statement is only compiled for PostgreSQL's dialect.
    engine = create_db_engine("postgresql://kw:kw@127.0.0.1:1/kw")
    with Session(engine) as session:
        yield session
    engine.dispose()


def test_among_selects_exactly_the_rows_named_on_sqlite(sqlite_engine: Engine) -> None:
    with Session(sqlite_engine) as session:
        query = select(KERNELS.c.id).where(among(session, KERNELS.c.id, iter([9, 2, 5, 42])))
        # Any iterable, read once: a generator's values are all bound, not just the first.
        assert sorted(session.scalars(query)) == [2, 5, 9]


def test_among_of_nothing_selects_nothing_on_sqlite(sqlite_engine: Engine) -> None:
    with Session(sqlite_engine) as session:
        query = select(KERNELS.c.id).where(among(session, KERNELS.c.id, []))
        assert session.scalars(query).all() == []


def test_among_is_one_array_parameter_on_postgresql(postgres_session: Session) -> None:
    # One statement whatever the count: 3 values and 300 compile to the same SQL.
    def compiled(values: list[int]):
        clause = among(postgres_session, KERNELS.c.id, values)
        return clause.compile(dialect=postgresql.dialect())

    three, many = compiled([1, 2, 3]), compiled(list(range(300)))
    assert str(three) == str(many)
    assert "= ANY (" in str(three) and " IN " not in str(three)
    assert list(three.params.values()) == [[1, 2, 3]]


def test_among_on_sqlite_is_an_in_list(sqlite_engine: Engine) -> None:
    with Session(sqlite_engine) as session:
        clause = among(session, KERNELS.c.id, (1, 2))
    assert " IN " in str(clause.compile(dialect=sqlite.dialect()))


def test_dialect_insert_is_each_databases_own(
    sqlite_engine: Engine, postgres_session: Session
) -> None:
    with Session(sqlite_engine) as session:
        assert dialect_insert(session) is sqlite.insert
    assert dialect_insert(postgres_session) is postgresql.insert


def test_the_sqlite_insert_skips_a_duplicate_on_conflict(sqlite_engine: Engine) -> None:
    with Session(sqlite_engine) as session:
        insert = dialect_insert(session)
        statement = insert(KERNELS).values(id=11, name="k1").on_conflict_do_nothing()
        session.execute(statement)
        session.commit()
        assert session.scalars(select(KERNELS.c.id).where(KERNELS.c.name == "k1")).all() == [1]
