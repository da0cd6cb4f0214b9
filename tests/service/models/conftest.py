"""Fixtures of the models' tests: a session on the test's migrated database (SQLite, and
PostgreSQL where KERNELWATCH_TEST_POSTGRES_URL is set), the rows most tables hang from (a
repository, a commit in it, a run at that commit, one workload of the run, a series), and a
writer that names only the columns it is given, so that what the database itself fills in shows."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, MetaData, Table, func, select
from sqlalchemy.orm import Session

from service.core.db import session_factory
from service.models import Commit, Repository, Run, RunWorkload, Series

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def added(session: Session, row: Any) -> Any:
    """The row, inserted (its id known)."""
    session.add(row)
    session.flush()
    return row


def count(session: Session, model: type) -> int:
    return session.scalar(select(func.count()).select_from(model))


def insert_bare(session: Session, table: str, **values: Any) -> int:
    """Insert through the table as the database has it (reflected: none of the models' Python
    defaults), naming only `values`: what an older writer, or a row from before a migration, has."""
    reflected = Table(table, MetaData(), autoload_with=session.connection())
    return session.execute(reflected.insert().values(**values)).inserted_primary_key[0]


def commit_row(repo: Repository, sha: str = "a" * 40) -> Commit:
    return Commit(repository_id=repo.id, sha=sha, committed_at=T0)


def run_row(repo: Repository, commit: Commit, uuid: str = "run-1") -> Run:
    return Run(run_uuid=uuid, document_sha256="d" * 64, repository_id=repo.id,
               commit_id=commit.id, suite="kernels", branch="main", status="succeeded",
               fingerprint="f" * 64, build_status="ok", started_at=T0,
               finished_at=T0)  # fmt: skip


def workload_row(run: Run, name: str = "gemm_fwd", params_key: str = "m=8") -> RunWorkload:
    return RunWorkload(run_id=run.id, name=name, params_key=params_key, status="ok")


def series_row(repo: Repository, identity: str = "s" * 64) -> Series:
    return Series(identity=identity, repository_id=repo.id, suite="kernels",
                  workload="gemm_fwd", params_key="m=8", kernel="gemm_bias_act_fwd",
                  metric="duration", unit="us", method="cuda_events",
                  fingerprint="f" * 64)  # fmt: skip


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    with session_factory(engine)() as session:
        yield session


@pytest.fixture
def repo(session: Session) -> Repository:
    return added(session, Repository(name="acme/kernels"))


@pytest.fixture
def commit(session: Session, repo: Repository) -> Commit:
    return added(session, commit_row(repo))


@pytest.fixture
def run(session: Session, repo: Repository, commit: Commit) -> Run:
    return added(session, run_row(repo, commit))


@pytest.fixture
def workload(session: Session, run: Run) -> RunWorkload:
    return added(session, workload_row(run))


@pytest.fixture
def series(session: Session, repo: Repository) -> Series:
    return added(session, series_row(repo))
