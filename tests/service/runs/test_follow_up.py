"""service.runs.follow_up.after_store: a pull request's run queues a run of its merge base."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import session_factory
from service.models import Job
from service.runs.follow_up import after_store
from service.schemas.document import RunDocument
from service.store.history.ingest import ingest
from tests.documents import document, sha_for


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return session_factory(engine)


def stored(factory: sessionmaker[Session], raw: dict[str, Any]) -> int:
    outcome = ingest(factory, RunDocument.model_validate(raw), raw)
    assert outcome.pk is not None
    return outcome.pk


def pr_run(label: str, merge_base: str | None = "main-1", minutes: int = 4) -> dict[str, Any]:
    raw = document(commit=label, branch="pull/7", ancestors=["main-1", "main-0"], minutes=minutes)
    raw["pull_request"] = {"number": 7, "base_ref": "main",
                           "merge_base": sha_for(merge_base) if merge_base else None}  # fmt: skip
    return raw


def jobs(factory: sessionmaker[Session]) -> list[Any]:
    with factory() as session:
        return list(session.execute(
            select(Job.id, Job.kind, Job.commit_sha, Job.branch, Job.state, Job.max_attempts,
                   Job.summary).order_by(Job.id)))  # fmt: skip


def test_a_merge_base_without_a_run_is_queued_on_the_target_branch(
    factory: sessionmaker[Session],
) -> None:
    queued = after_store(factory, stored(factory, pr_run("pr-head")), max_attempts=2)
    ((job_id, *job),) = jobs(factory)
    assert queued == [job_id]
    assert job == ["run", sha_for("main-1"), "main", "queued", 2, "merge base of #7"]


def test_a_branchs_own_run_queues_nothing(factory: sessionmaker[Session]) -> None:
    run = stored(factory, document(commit="main-1", ancestors=["main-0"]))
    assert after_store(factory, run, max_attempts=2) == []
    assert jobs(factory) == []


def test_a_merge_base_measured_already_is_not_queued(factory: sessionmaker[Session]) -> None:
    stored(factory, document(commit="main-1", ancestors=["main-0"]))
    assert after_store(factory, stored(factory, pr_run("pr-head")), max_attempts=2) == []
    assert jobs(factory) == []


def test_a_merge_base_queued_already_is_not_queued_twice(factory: sessionmaker[Session]) -> None:
    (first,) = after_store(factory, stored(factory, pr_run("pr-head")), max_attempts=2)
    assert after_store(factory, stored(factory, pr_run("pr-head-2", minutes=5)), 2) == []
    assert [j.id for j in jobs(factory)] == [first]


def test_a_pull_requests_run_without_a_merge_base_queues_nothing(
    factory: sessionmaker[Session],
) -> None:
    run = stored(factory, pr_run("pr-head", merge_base=None))
    assert after_store(factory, run, max_attempts=2) == []
    assert jobs(factory) == []
