"""Get-or-create that is safe when two writers race for the same natural key."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from service.core.sql import dialect_insert
from service.models import Base

M = TypeVar("M", bound=Base)


def get_or_create(session: Session, model: type[M], key: dict[str, Any], **values: Any) -> M:
    """Row of `model` with the unique `key`; inserted with `values` if absent.

    INSERT ... ON CONFLICT DO NOTHING followed by a SELECT never raises on a concurrent insert of
    the same key, unlike a plain SELECT-then-INSERT, and it does not abort the surrounding
    transaction on PostgreSQL.
    """
    found = session.scalars(select(model).filter_by(**key)).one_or_none()
    if found is not None:
        return found
    session.execute(dialect_insert(session)(model).values(**key, **values).on_conflict_do_nothing())
    return session.scalars(select(model).filter_by(**key)).one()


def find_or_insert(
    session: Session,
    model: type[Base],
    key: dict[str, Any],
    columns: list[Any],
    *,
    insert_first: bool = False,
    **values: Any,
) -> Row[Any]:
    """`columns` of the row of `model` with the unique `key`, inserted with `values` if absent:
    get_or_create without ORM objects, for the ingest's hot path.

    `insert_first` tries the INSERT ... RETURNING first: one round trip when the row is usually
    new (two when it was not), where looking first costs two (the SELECT, then the INSERT)."""
    query = select(*columns).filter_by(**key)
    if not insert_first:
        found = session.execute(query).one_or_none()
        if found is not None:
            return found
    statement = dialect_insert(session)(model).values(**key, **values).on_conflict_do_nothing()
    inserted = session.execute(statement.returning(*columns)).one_or_none()
    return inserted if inserted is not None else session.execute(query).one()
