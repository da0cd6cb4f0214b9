"""The runners' rows and what a repository asks of them: their tokens (issued and revoked by
`kernelwatch runner-token`), what an agent reports of itself (registration, heartbeats, health),
when it was last seen, and the label sets a repository's pushes queue jobs for."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.core.errors import Conflict, NotFound
from service.models import Repository, Runner
from service.models.base import utcnow
from service.store.upsert import get_or_create


def issue_token(
    session: Session, name: str, labels: dict[str, str], digest: str, rotate: bool
) -> Runner:
    """Give runner `name` (made where there is none) the token whose digest is `digest`, and
    its labels where some are given; Conflict where it has a live token and `rotate` is off."""
    runner = _named(session, name)
    if runner is None:
        runner = Runner(name=name, labels=labels, created_at=utcnow())
        session.add(runner)
    elif runner.token_hash and runner.revoked_at is None and not rotate:
        raise Conflict(f"runner {name!r} already has a token; revoke it first or pass --rotate")
    else:
        runner.labels = labels or runner.labels
    runner.token_hash, runner.revoked_at = digest, None
    return runner


def revoke_token(session: Session, name: str) -> None:
    """Refuse runner `name`'s token from now on; NotFound where it has none."""
    runner = _named(session, name)
    if runner is None or runner.token_hash is None:
        raise NotFound(f"no runner named {name!r} has a token")
    runner.revoked_at = utcnow()


def seen(runner: Runner) -> None:
    """The runner spoke: it is alive now."""
    runner.last_seen_at = utcnow()


def register(
    runner: Runner, host: str, environment: dict[str, Any], labels: dict[str, str]
) -> None:
    """What an agent reports of its host once its checks passed: an earlier fault is over. The
    labels it reports are kept apart from its token's: a report narrows what it claims, never
    widens it."""
    runner.host, runner.environment, runner.reported_labels = host, environment, labels
    healthy(runner, True, "")


def healthy(runner: Runner, ok: bool, reason: str) -> None:
    """Whether the runner's host can run jobs; an unhealthy one is given none."""
    now = utcnow()
    runner.last_seen_at = now
    if ok:
        runner.unhealthy_since, runner.unhealthy_reason = None, ""
    else:
        runner.unhealthy_since = runner.unhealthy_since or now
        runner.unhealthy_reason = reason.strip()


def demo_runner(session: Session, name: str, environment: dict[str, Any]) -> Runner:
    """The runner a recording is answered as (made where there is none), seen now with the
    recording's environment."""
    runner = _named(session, name)
    if runner is None:
        runner = Runner(name=name, host="demo", labels={}, created_at=utcnow())
        session.add(runner)
        session.flush()
    runner.environment = environment
    seen(runner)
    return runner


def label_sets(
    session: Session, repository: str, clone_url: str | None, sets: list[dict[str, str]]
) -> Repository:
    """Each commit pushed to `repository` (made where there is none) queues one job per label
    set, each for a runner whose labels hold it."""
    repo = get_or_create(session, Repository, {"name": repository}, clone_url=clone_url,
                         runner_label_sets=[{}], created_at=utcnow())  # fmt: skip
    repo.runner_label_sets = sets
    return repo


def _named(session: Session, name: str) -> Runner | None:
    return session.scalars(select(Runner).where(Runner.name == name)).one_or_none()
