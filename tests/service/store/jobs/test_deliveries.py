"""Incoming GitHub deliveries' rows (service.store.jobs.deliveries), on SQLite and PostgreSQL: a
delivery is remembered with what was done with it, so that its redelivery answers the same and
a second row of one id is refused; the repository a delivery names is made once with one job
per commit for any runner; a push queues one job per commit and label set, keeps the push's
commits on the jobs of the commit they belong to, and cancels the branch's older queued runs
only where asked to."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.models import Job, Repository
from service.store.jobs import queue
from service.store.jobs.deliveries import (
    Outcome,
    queue_commits,
    remember,
    repository_for,
    seen_delivery,
)

SHA = {label: label * 40 for label in "abcde"}


def test_a_remembered_delivery_answers_its_redelivery_the_same(
    factory: sessionmaker[Session],
) -> None:
    assert seen_delivery(factory, "d-1") is None
    with factory() as session, session.begin():
        remember(session, "d-1", "push", Outcome("queued", "queued 2 jobs", [4, 5]))
    again = seen_delivery(factory, "d-1")
    assert again == Outcome(
        "queued", "delivery d-1 was handled already: queued 2 jobs", [4, 5], redelivery=True
    )
    with factory() as session, pytest.raises(IntegrityError), session.begin():
        remember(session, "d-1", "push", Outcome("done", "again"))


def test_the_repository_a_delivery_names_is_made_once(factory: sessionmaker[Session]) -> None:
    with factory() as session, session.begin():
        made = repository_for(session, "acme/k", "https://example.com/acme/k.git")
        assert made.runner_label_sets == [{}]
        made.runner_label_sets = [{"gpu": "h100"}]
    with factory() as session, session.begin():
        again = repository_for(session, "acme/k", "https://elsewhere/acme/k.git")
        assert again.id == made.id
        assert again.clone_url == "https://example.com/acme/k.git"
        assert again.runner_label_sets == [{"gpu": "h100"}]


def test_a_push_queues_a_job_per_commit_and_label_set_with_the_push_on_its_commit(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        repo = repository_for(session, "acme/k", None)
        repo.runner_label_sets = [{"gpu": "h100"}, {"gpu": "a100"}]
        session.flush()
        ids, cancelled = queue_commits(
            session, repo, "main", [(SHA["a"], "first"), (SHA["b"], "second")],
            push_commits={SHA["b"]: [SHA["a"], SHA["b"]]}, max_attempts=3,
            delivery_id="d-1", cancel_superseded=False,
        )  # fmt: skip
    assert cancelled == 0
    with factory() as session:
        jobs = session.scalars(select(Job).where(Job.id.in_(ids)).order_by(Job.id)).all()
    assert [(j.commit_sha, j.required_labels, j.summary) for j in jobs] == [
        (SHA["a"], {"gpu": "h100"}, "first"),
        (SHA["a"], {"gpu": "a100"}, "first"),
        (SHA["b"], {"gpu": "h100"}, "second"),
        (SHA["b"], {"gpu": "a100"}, "second"),
    ]
    assert [j.payload for j in jobs[:2]] == [{}, {}]
    assert all(j.payload == {"push_commits": [SHA["a"], SHA["b"]]} for j in jobs[2:])
    assert {(j.delivery_id, j.max_attempts, j.state) for j in jobs} == {("d-1", 3, "queued")}


def test_a_newer_push_cancels_only_the_branchs_older_queued_runs_where_asked(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        repo = repository_for(session, "acme/k", None)
        session.flush()

        def push(branch: str, sha: str, cancel: bool) -> tuple[list[int], int]:
            return queue_commits(session, repo, branch, [(sha, "")], push_commits={},
                                 max_attempts=3, delivery_id=sha[:1],
                                 cancel_superseded=cancel)  # fmt: skip

        (older,), _ = push("main", SHA["a"], cancel=False)
        (second,), _ = push("main", SHA["b"], cancel=False)
        (other_branch,), _ = push("release", SHA["c"], cancel=True)
        confirm = queue.enqueue(session, repository_id=repo.id, sha=SHA["d"], branch="main",
                                label_sets=[{}], max_attempts=3, kind="confirm")[0]  # fmt: skip
        (newest,), cancelled = push("main", SHA["e"], cancel=True)
    assert cancelled == 2
    with factory() as session:
        states = dict(session.execute(select(Job.id, Job.state)).all())
        failure = session.get(Job, older).failure
    assert states == {older: "cancelled", second: "cancelled", other_branch: "queued",
                      confirm.id: "queued", newest: "queued"}  # fmt: skip
    assert failure == "superseded by a newer push"
    with factory() as session:
        assert session.scalars(select(Repository.name)).all() == ["acme/k"]
