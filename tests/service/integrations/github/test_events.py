"""GitHub's events turned into jobs (service.integrations.github.events), handed to `receive` on
a real database as the webhook route hands them once their signature holds: the payloads read
loosely (unknown fields ignored, a commit message clipped, never refused) but strictly where a
runner's git or the database would suffer (shas, a clone URL that git could take for an option,
pull request numbers); each delivery remembered with its outcome in the transaction of its jobs,
so the same delivery twice queues once; a push queues its head under its subject line (or each
distinct commit with `queue_every_commit`), keeps the push's commits on the head's job only where
the head ends them, and cancels older queued jobs only with `cancel_superseded`; a pull request
acts on opened, synchronize, reopened and closed alone."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import session_factory
from service.core.errors import Unprocessable
from service.core.settings import Settings
from service.integrations.github import events
from service.models import Job, PullRequest, Repository
from service.schemas.document import MAX_TEXT
from service.store.jobs.deliveries import seen_delivery
from tests.documents import sha_for
from tests.service.api.routes.test_webhooks import push_payload

REPO = "acme/kernels"


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return session_factory(engine)


def jobs(engine: Engine) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(select(Job).order_by(Job.id)).all())


def pr_event(action: str, *, head: str = "pr-head", merged: bool = False) -> dict[str, Any]:
    return {
        "action": action,
        "number": 7,
        "pull_request": {
            "number": 7,
            "title": "gemm: a faster epilogue",
            "merged": merged,
            "head": {"ref": "faster-epilogue", "sha": sha_for(head)},
            "base": {"ref": "main", "sha": sha_for("main-2")},
        },
        "repository": {"full_name": REPO, "clone_url": f"https://github.com/{REPO}.git"},
    }


# --- payloads -----------------------------------------------------------------------------------


def test_unknown_fields_are_ignored() -> None:
    push = events.PushPayload.model_validate(push_payload(after=sha_for("a")))
    assert push.after == sha_for("a") and push.repository.full_name == REPO
    assert not hasattr(push, "pusher") and not hasattr(push, "compare")


def test_a_long_commit_message_is_clipped_not_refused() -> None:
    commit = events.PushCommit(id=sha_for("a"), message="x" * (MAX_TEXT + 10))
    assert len(commit.message) == MAX_TEXT


@pytest.mark.parametrize("url", ["--upload-pack=touch /tmp/x", "-c core.sshCommand=sh"])
def test_a_clone_url_git_would_read_as_an_option_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="clone_url"):
        events.EventRepository(full_name=REPO, clone_url=url)
    assert events.EventRepository(full_name=REPO, clone_url="").clone_url == ""


@pytest.mark.parametrize(
    ("field", "value"),
    [("after", sha_for("a").upper()), ("after", sha_for("a")[:39]), ("before", "abc123")],
)
def test_a_pushs_shas_are_forty_lowercase_hex_digits(field: str, value: str) -> None:
    with pytest.raises(ValidationError, match=field):
        events.PushPayload.model_validate({**push_payload(after=sha_for("a")), field: value})


@pytest.mark.parametrize(
    ("number", "taken"), [(0, False), (1, True), (2**31 - 1, True), (2**31, False)]
)
def test_a_pull_request_number_is_a_positive_32_bit_integer(number: int, taken: bool) -> None:
    payload = pr_event("opened")
    payload["number"] = payload["pull_request"]["number"] = number
    if taken:
        assert events.PullRequestEvent.model_validate(payload).number == number
    else:
        with pytest.raises(ValidationError, match="number"):
            events.PullRequestEvent.model_validate(payload)


# --- deliveries ---------------------------------------------------------------------------------


def test_a_ping_is_answered_and_remembered(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    outcome = events.receive(factory, settings, "d-ping", "ping", {"zen": "Design for failure."})
    assert (outcome.done, outcome.detail) == ("done", "pong: the webhook is set up")
    seen = seen_delivery(factory, "d-ping")
    assert seen is not None and seen.redelivery and "pong" in seen.detail


def test_an_event_other_than_push_or_pull_request_is_ignored(
    factory: sessionmaker[Session], settings: Settings, engine: Engine
) -> None:
    outcome = events.receive(factory, settings, "d-1", "issues", {"action": "opened"})
    assert outcome.done == "ignored"
    assert outcome.detail == (
        "event 'issues' ignored: kernelwatch acts on push and pull_request events"
    )
    assert jobs(engine) == []


def test_the_same_delivery_twice_queues_once_and_answers_the_first(
    factory: sessionmaker[Session], settings: Settings, engine: Engine
) -> None:
    payload = push_payload(after=sha_for("a"))
    first = events.receive(factory, settings, "d-1", "push", payload)
    again = events.receive(factory, settings, "d-1", "push", payload)
    assert again.redelivery and again.job_ids == first.job_ids and again.done == "queued"
    assert len(jobs(engine)) == 1


def test_a_push_queues_its_head_under_its_subject_line(
    factory: sessionmaker[Session], settings: Settings, engine: Engine
) -> None:
    head = sha_for("head")
    payload = push_payload(after=head, commits=[sha_for("first"), head])
    outcome = events.receive(factory, settings, "d-1", "push", payload)
    (job,) = jobs(engine)
    assert outcome.done == "queued" and outcome.job_ids == [job.id]
    assert outcome.detail == f"queued 1 job(s) for {REPO}@main {head[:12]}"
    assert (job.commit_sha, job.branch, job.summary) == (head, "main", "change 1")
    assert job.delivery_id == "d-1"


def test_a_branch_no_result_document_could_carry_is_refused_and_not_remembered(
    factory: sessionmaker[Session], settings: Settings, engine: Engine
) -> None:
    payload = {**push_payload(after=sha_for("a")), "ref": "refs/heads/feature..x"}
    with pytest.raises(Unprocessable, match="invalid push payload: ref: "):
        events.receive(factory, settings, "d-1", "push", payload)
    assert jobs(engine) == []
    assert seen_delivery(factory, "d-1") is None  # a corrected redelivery is still handled


def pushed(commits: list[tuple[str, bool]], after: str) -> dict[str, Any]:
    """A push of `commits` (label, distinct), its head `after`."""
    payload = push_payload(after=sha_for(after), commits=[sha_for(c) for c, _ in commits])
    for entry, (_, distinct) in zip(payload["commits"], commits, strict=True):
        entry["distinct"] = distinct
    if after not in [c for c, _ in commits]:  # a list that GitHub cut short of the head
        payload["head_commit"] = {"id": sha_for(after), "message": "the head", "distinct": True}
    return payload


@pytest.mark.parametrize(
    ("commits", "after", "kept"),
    [
        ([("a", True), ("b", True), ("c", True)], "c", ["a", "b", "c"]),
        ([("a", True), ("b", False), ("c", True)], "c", ["a", "c"]),
        ([("a", True), ("b", True), ("c", False)], "c", None),  # the head is not distinct
        ([("a", True), ("b", True)], "z", None),  # the head is not in the push's list
        ([("c", True)], "c", None),  # one commit: nothing to bisect over
    ],
    ids=["all", "not-distinct-left-out", "head-not-distinct", "head-elsewhere", "one"],
)
def test_the_pushs_commits_are_kept_on_the_heads_job_only_where_the_head_ends_them(
    factory: sessionmaker[Session],
    settings: Settings,
    engine: Engine,
    commits: list[tuple[str, bool]],
    after: str,
    kept: list[str] | None,
) -> None:
    events.receive(factory, settings, "d-1", "push", pushed(commits, after))
    (job,) = jobs(engine)
    assert job.commit_sha == sha_for(after)
    expected = {"push_commits": [sha_for(c) for c in kept]} if kept else {}
    assert job.payload == expected


def test_a_long_push_keeps_its_newest_commits(
    factory: sessionmaker[Session], settings: Settings, engine: Engine
) -> None:
    labels = [f"c{i}" for i in range(events.MAX_PUSH_COMMITS + 6)]
    events.receive(
        factory, settings, "d-1", "push", pushed([(c, True) for c in labels], labels[-1])
    )
    (job,) = jobs(engine)
    newest = labels[-events.MAX_PUSH_COMMITS :]
    assert job.payload == {"push_commits": [sha_for(c) for c in newest]}


@pytest.mark.parametrize(
    ("commits", "queued"),
    [
        ([("a", True), ("b", False), ("c", True)], ["a", "c"]),
        ([("a", False), ("b", False)], ["b"]),  # none distinct: the last one
    ],
)
def test_queue_every_commit_queues_each_distinct_commit_or_else_the_last(
    factory: sessionmaker[Session],
    settings: Settings,
    engine: Engine,
    commits: list[tuple[str, bool]],
    queued: list[str],
) -> None:
    settings.queue_every_commit = True
    outcome = events.receive(factory, settings, "d-1", "push", pushed(commits, commits[-1][0]))
    assert [j.commit_sha for j in jobs(engine)] == [sha_for(c) for c in queued]
    assert len(outcome.job_ids) == len(queued)


@pytest.mark.parametrize("cancel", [True, False])
def test_a_newer_push_cancels_the_branchs_queued_jobs_only_where_set_to(
    factory: sessionmaker[Session], settings: Settings, engine: Engine, cancel: bool
) -> None:
    settings.cancel_superseded = cancel
    events.receive(factory, settings, "d-1", "push", push_payload(after=sha_for("old")))
    newer = events.receive(factory, settings, "d-2", "push", push_payload(after=sha_for("new")))
    states = [j.state for j in jobs(engine)]
    if cancel:
        assert states == ["cancelled", "queued"]
        assert newer.detail.endswith("; cancelled 1 older queued job(s)")
    else:
        assert states == ["queued", "queued"]
        assert "cancelled" not in newer.detail


@pytest.mark.parametrize("action", ["labeled", "edited", "assigned", "ready_for_review"])
def test_a_pull_request_action_it_does_not_act_on_changes_nothing(
    factory: sessionmaker[Session], settings: Settings, engine: Engine, action: str
) -> None:
    outcome = events.receive(factory, settings, "d-1", "pull_request", pr_event(action))
    assert (outcome.done, outcome.detail) == ("ignored", f"pull request #7 {action}: nothing to do")
    with engine.connect() as conn:
        assert conn.execute(select(PullRequest)).all() == []
        assert conn.execute(select(Repository)).all() == []
    assert jobs(engine) == []


def test_a_pull_request_closed_unmerged_cancels_its_queue_and_reopened_queues_again(
    factory: sessionmaker[Session], settings: Settings, engine: Engine
) -> None:
    opened = events.receive(factory, settings, "d-1", "pull_request", pr_event("opened"))
    assert opened.done == "queued"
    closed = events.receive(factory, settings, "d-2", "pull_request", pr_event("closed"))
    assert closed.done == "done"
    assert closed.detail == "pull request #7 closed: cancelled 1 queued job(s)"
    with engine.connect() as conn:
        assert conn.execute(select(PullRequest.state)).scalar_one() == "closed"
    reopened = events.receive(factory, settings, "d-3", "pull_request", pr_event("reopened"))
    assert reopened.done == "queued"
    assert [(j.branch, j.state) for j in jobs(engine)] == [
        ("pull/7", "cancelled"),
        ("pull/7", "queued"),
    ]
    with engine.connect() as conn:
        assert conn.execute(select(PullRequest.state)).scalar_one() == "open"
