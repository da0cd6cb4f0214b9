"""Get-or-create by a natural key (service.store.upsert), on SQLite and PostgreSQL: an existing
row is returned as it is (the values given apply only to an insert); a row another writer
inserted between the look-up and the insert is returned instead of an error, and the caller's
transaction goes on; and `find_or_insert` costs the round trips its docstring counts (one for a
new row with `insert_first`, two for a row that was there)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event, func, select
from sqlalchemy.orm import Session

from service.models import Repository
from service.store.upsert import find_or_insert, get_or_create


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    seen: list[str] = []

    def grab(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", grab)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", grab)


def test_an_existing_row_is_returned_as_it_is(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        made = get_or_create(session, Repository, {"name": "acme/k"}, clone_url="https://a/k")
        again = get_or_create(session, Repository, {"name": "acme/k"}, clone_url="https://b/k")
        assert again.id == made.id
        # The values are an insert's: a second caller's never overwrite the stored row.
        assert again.clone_url == "https://a/k"
    with Session(engine) as session:
        assert session.scalar(select(func.count()).select_from(Repository)) == 1


def test_a_row_inserted_meanwhile_is_returned_and_the_transaction_goes_on(
    engine: Engine,
) -> None:
    raced = []

    def other_writer_first(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        # Between get_or_create's look-up and its insert, another connection commits the key.
        if statement.lstrip().upper().startswith("INSERT") and not raced:
            raced.append(True)
            with engine.begin() as other:
                other.execute(
                    Repository.__table__.insert().values(name="acme/k", clone_url="https://other")
                )

    with Session(engine) as session, session.begin():
        event.listen(engine, "before_cursor_execute", other_writer_first)
        try:
            row = get_or_create(session, Repository, {"name": "acme/k"}, clone_url="https://me")
        finally:
            event.remove(engine, "before_cursor_execute", other_writer_first)
        assert raced
        assert row.clone_url == "https://other"
        # Not aborted (PostgreSQL would refuse every later statement of an aborted one).
        get_or_create(session, Repository, {"name": "acme/next"})
    with Session(engine) as session:
        names = session.scalars(select(Repository.name).order_by(Repository.name)).all()
    assert names == ["acme/k", "acme/next"]


def test_find_or_insert_returns_the_columns_asked_for_and_ignores_values_of_a_known_row(
    engine: Engine,
) -> None:
    with Session(engine) as session, session.begin():
        columns = [Repository.id, Repository.clone_url]
        made = find_or_insert(session, Repository, {"name": "acme/k"}, columns,
                              clone_url="https://a/k")  # fmt: skip
        found = find_or_insert(session, Repository, {"name": "acme/k"}, columns,
                               insert_first=True, clone_url="https://b/k")  # fmt: skip
    assert tuple(made) == tuple(found)
    assert found.clone_url == "https://a/k"
    assert found._fields == ("id", "clone_url")


def test_insert_first_costs_one_statement_for_a_new_row_and_two_for_a_known_one(
    engine: Engine,
) -> None:
    key, columns = {"name": "acme/k"}, [Repository.id]
    with Session(engine) as session, session.begin():
        with statements(engine) as new_first:
            find_or_insert(session, Repository, key, columns, insert_first=True)
        with statements(engine) as known_first:
            find_or_insert(session, Repository, key, columns, insert_first=True)
        with statements(engine) as new_looked:
            find_or_insert(session, Repository, {"name": "acme/other"}, columns)
        with statements(engine) as known_looked:
            find_or_insert(session, Repository, key, columns)
    assert len(new_first) == 1 and "INSERT" in new_first[0].upper()
    assert len(known_first) == 2
    # Looking first: the look-up, then the INSERT ... RETURNING (the docstring's "three" is
    # get_or_create's count, whose insert returns nothing and is read back).
    assert len(new_looked) == 2
    assert len(known_looked) == 1 and known_looked[0].upper().lstrip().startswith("SELECT")
