"""A pull request's rows (service.store.jobs.pull_requests), on SQLite and PostgreSQL: its row
is made open once and takes each event's title and target; closing it cancels what it queued
on its branch, nothing else; its head is queued on pull/<number> with what its verdicts compare
with, older queued heads cancelled; and its merge base gets a run on the target branch only
where none is stored or coming (a branch's own run asks for none)."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.models import Job, PullRequest, Repository, Run
from service.store.jobs import queue
from service.store.jobs.pull_requests import (
    close,
    pull_request_row,
    queue_head,
    queue_merge_base,
    queue_merge_base_of,
)
from service.store.upsert import get_or_create
from tests.documents import document, sha_for
from tests.service.store.conftest import Store

HEAD, NEXT_HEAD, BASE = "1" * 40, "2" * 40, "3" * 40


def repository(session: Session) -> Repository:
    repo = get_or_create(session, Repository, {"name": "acme/kernels"}, runner_label_sets=[{}])
    session.flush()
    return repo


def states(factory: sessionmaker[Session]) -> dict[tuple[str, str], str]:
    with factory() as session:
        rows = session.execute(select(Job.branch, Job.commit_sha, Job.state)).all()
    return {(branch, sha): state for branch, sha, state in rows}


def test_the_row_is_made_open_once_and_takes_each_events_title_and_target(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        repo = repository(session)
        made = pull_request_row(session, repo, 7, "x" * 600, HEAD, "main")
        made_id = made.id
        assert (made.state, made.head_sha, made.title) == ("open", HEAD, "x" * 500)
        made.state = "closed"
    with factory() as session, session.begin():
        again = pull_request_row(session, repository(session), 7, "faster gemm", NEXT_HEAD,
                                 "release")  # fmt: skip
        # The head moves only when it is queued (queue_head), the state only by close/queue.
        assert (again.id, again.title, again.base_ref) == (made_id, "faster gemm", "release")
        assert (again.state, again.head_sha) == ("closed", HEAD)


def test_closing_cancels_what_the_pull_request_queued_and_nothing_else(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        repo = repository(session)
        pull = pull_request_row(session, repo, 7, "t", HEAD, "main")
        queue_head(session, repo, pull, HEAD, BASE, 3, "d-1", "head")
        queue.enqueue(session, repository_id=repo.id, sha=HEAD, branch="main", label_sets=[{}],
                      max_attempts=3)  # fmt: skip
        assert close(session, repo, pull, "merged") == 1
        assert pull.state == "merged"
    assert states(factory) == {("pull/7", HEAD): "cancelled", ("main", HEAD): "queued"}
    with factory() as session:
        failure = session.scalars(select(Job.failure).where(Job.branch == "pull/7")).one()
    assert failure == "pull request #7 merged"


def test_a_new_head_is_queued_on_its_branch_with_its_base_and_the_old_one_cancelled(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        repo = repository(session)
        repo.runner_label_sets = [{"gpu": "h100"}]
        pull = pull_request_row(session, repo, 7, "t", HEAD, "main")
        queue_head(session, repo, pull, HEAD, BASE, 3, "d-1", "first")
        pull.state = "closed"  # reopened by its next head
        ids, cancelled = queue_head(session, repo, pull, NEXT_HEAD, BASE, 3, "d-2", "second")
        assert (pull.state, pull.head_sha, cancelled) == ("open", NEXT_HEAD, 1)
    with factory() as session:
        (job,) = session.scalars(select(Job).where(Job.id.in_(ids))).all()
        assert session.scalars(select(PullRequest.head_sha)).one() == NEXT_HEAD
    assert (job.branch, job.commit_sha, job.required_labels, job.summary) == (
        "pull/7",
        NEXT_HEAD,
        {"gpu": "h100"},
        "second",
    )
    assert job.payload == {"pull_request": {"number": 7, "base_ref": "main", "base_sha": BASE}}
    assert states(factory) == {("pull/7", HEAD): "cancelled", ("pull/7", NEXT_HEAD): "queued"}


def pull_run(store: Store, merge_base: str = "base") -> int:
    doc = document(commit="head", branch="pull/7", minutes=5)
    doc["pull_request"] = {"number": 7, "base_ref": "main", "merge_base": sha_for(merge_base)}
    return store(doc)


def test_a_merge_base_never_measured_on_its_target_gets_one_run_queued(
    factory: sessionmaker[Session], store: Store
) -> None:
    run_id = pull_run(store)
    with factory() as session, session.begin():
        (job_id,) = queue_merge_base_of(session, run_id, max_attempts=2)
        # Now coming: asking again queues nothing.
        assert queue_merge_base_of(session, run_id, max_attempts=2) == []
    with factory() as session:
        job = session.get(Job, job_id)
    assert (job.branch, job.commit_sha) == ("main", sha_for("base"))
    assert job.summary == "merge base of #7"


@pytest.mark.parametrize("where", ["main", "release"])
def test_a_merge_base_measured_on_its_target_gets_none(
    factory: sessionmaker[Session], store: Store, where: str
) -> None:
    store(document(commit="base", branch=where))
    run_id = pull_run(store)
    with factory() as session, session.begin():
        queued = queue_merge_base_of(session, run_id, max_attempts=2)
    # Measured on another branch is not measured on the target.
    assert (queued == []) == (where == "main")


def test_a_branchs_own_run_asks_for_no_merge_base(
    factory: sessionmaker[Session], store: Store
) -> None:
    run_id = store(document(commit="c0"))
    with factory() as session, session.begin():
        assert queue_merge_base_of(session, run_id, 2) == []
        assert queue_merge_base_of(session, 10_000, 2) == []
        run = session.get(Run, run_id)
        assert queue_merge_base(session, run, 2) == []
