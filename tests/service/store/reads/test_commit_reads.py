"""A commit's metrics read touches the commit's own rows, not the history behind them (issue 34
item 7): on PostgreSQL without planner statistics (a history stored through the API where
autovacuum has not analysed it) its joins were planned as scans of whole tables, and the read
grew from 80 ms at 200 commits to 420 at 2,000. Histories are bulk-filled (benchmarks.scale_fill)
with the statistics left as such an ingest leaves them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import Session

from benchmarks.scale_fill import commit_sha, fill
from benchmarks.scale_shape import Shape
from service.core.db import create_db_engine
from service.evaluation.reads.commit_metrics import commit_metrics_data
from service.models import Base
from service.store.history.commits import resolve_commit

SERIES = 30
SHAPE = Shape(ncu_metrics=20, findings=2)  # what matters is the rows, not their width


def history(engine: Engine, commits: int) -> None:
    fill(engine, commits=commits, series=SERIES, samples=5, log=lambda m: None, shape=SHAPE,
         statistics=False)  # fmt: skip


def statements_of_a_read(engine: Engine, index: int) -> list[tuple[str, Any]]:
    """The statements (and their parameters) of the commit read at commit `index`."""
    seen: list[tuple[str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        seen.append((statement, parameters))

    with Session(engine) as session:
        commit, repository = resolve_commit(session, commit_sha(index), None)
        event.listen(engine, "before_cursor_execute", grab)
        try:
            answer = commit_metrics_data(session, commit, repository, None, ncu="all")
        finally:
            event.remove(engine, "before_cursor_execute", grab)
    assert len(answer["workloads"]) == SERIES
    assert all(k["ncu_metrics"] and k["work"] for w in answer["workloads"] for k in w["kernels"])
    return seen


@pytest.fixture
def postgres(postgres_database: str) -> Iterator[Engine]:
    engine = create_db_engine(postgres_database)
    yield engine
    engine.dispose()


def emptied(url: str) -> None:
    engine = create_engine(url)
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()


def buffers(engine: Engine, statements: list[tuple[str, Any]]) -> int:
    """Shared buffers the statements' plans touch (hit or read), summed."""
    total = 0
    with engine.connect() as conn:
        for statement, parameters in statements:
            (plan,) = conn.exec_driver_sql(
                f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}", parameters
            ).scalar_one()
            total += plan["Plan"]["Shared Hit Blocks"] + plan["Plan"]["Shared Read Blocks"]
    return total


@pytest.mark.postgres
def test_a_ten_times_longer_history_costs_the_read_no_more(
    postgres: Engine, postgres_database: str
) -> None:
    touched, counted = {}, {}
    for commits in (40, 400):
        emptied(postgres_database)
        history(postgres, commits)
        statements = statements_of_a_read(postgres, commits - 2)
        touched[commits], counted[commits] = buffers(postgres, statements), len(statements)
    assert counted[40] == counted[400]
    # An index a level deeper costs a page a lookup; a table scan costs the whole history.
    assert touched[400] <= 1.3 * touched[40], touched


def test_sqlite_finds_every_row_of_the_read_by_an_index(tmp_path: Any) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'kernelwatch.db'}")
    from service.core.migrate import upgrade

    upgrade(engine)
    history(engine, 60)
    statements = statements_of_a_read(engine, 50)
    with engine.connect() as conn:
        plans = [
            row[-1]
            for statement, parameters in statements
            for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
        ]
    assert plans and not [p for p in plans if p.startswith("SCAN")], plans
    engine.dispose()
