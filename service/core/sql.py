"""SQL expressions whose best form depends on the database."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, any_, bindparam
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session


def among(session: Session, column: Any, values: Iterable[Any]) -> ColumnElement[bool]:
    """`column IN (values)`; on PostgreSQL `column = ANY(:array)`, one parameter.

    An IN list is a placeholder per value: a read of a 200-workload commit sent thousands, and
    every new list length is a new statement to compile, for SQLAlchemy and for psycopg alike
    (a third of the request's time). An array keeps the statement the same whatever the count.
    """
    values = list(values)
    if session.get_bind().dialect.name != "postgresql":
        return column.in_(values)
    return column == any_(bindparam(None, values, type_=ARRAY(column.type)))


def dialect_insert(session: Session) -> Any:
    """The INSERT construct of the session's dialect, for ON CONFLICT clauses (PostgreSQL's
    and SQLite's share one shape)."""
    dialect = session.get_bind().dialect.name
    return postgresql.insert if dialect == "postgresql" else sqlite.insert
