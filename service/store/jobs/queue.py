"""The job queue: enqueue, atomic claim under a lease, lease upkeep, and the reaper."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import combinations
from typing import Any

from sqlalchemy import String, cast, literal, select, update
from sqlalchemy.orm import Session

from service.core.errors import Conflict, NotFound
from service.core.tokens import new_token, same_secret, token_hash
from service.models import Job, Runner
from service.models.base import utcnow
from service.models.runner import claimable_labels
from service.schemas.jobs import MAX_LABELS, label_key


def claimable_label_keys(labels: dict[str, Any]) -> list[str]:
    """Every label set a runner with `labels` satisfies: the keys of all their subsets.

    Matching by key equality keeps the claim a single indexed UPDATE on both databases instead
    of a JSON containment test that SQLite cannot index.
    """
    items = sorted(labels.items())[:MAX_LABELS]
    return [
        label_key(dict(subset))
        for size in range(len(items) + 1)
        for subset in combinations(items, size)
    ]


def enqueue(
    session: Session,
    *,
    repository_id: int,
    sha: str,
    branch: str,
    label_sets: list[dict[str, Any]],
    max_attempts: int,
    kind: str = "run",
    delivery_id: str | None = None,
    summary: str = "",
) -> list[Job]:
    jobs = [
        Job(
            repository_id=repository_id,
            commit_sha=sha,
            branch=branch,
            kind=kind,
            state="queued",
            required_labels=labels,
            label_key=label_key(labels),
            max_attempts=max_attempts,
            delivery_id=delivery_id,
            summary=summary[:500],
        )
        for labels in (label_sets or [{}])
    ]
    session.add_all(jobs)
    session.flush()
    return jobs


def finished_push_head(
    session: Session, repository_id: int, sha: str, push_commits: list[str]
) -> int:
    """A run job of a push's head recorded as done, as a recording's (the demo's) was: a
    regression found at the head is bisected over the push's commits; its id."""
    (job,) = enqueue(session, repository_id=repository_id, sha=sha, branch="main",
                     label_sets=[{}], max_attempts=1, summary="the head of a push")  # fmt: skip
    job.payload = {"push_commits": push_commits}
    job.state, job.finished_at = "succeeded", utcnow()
    return job.id


def job_kind(session: Session, job_id: int) -> str | None:
    """What a job is for ("run", "confirm", "bisect"); None where there is no such job."""
    return session.scalar(select(Job.kind).where(Job.id == job_id))


def cancel_queued(
    session: Session,
    *,
    repository_id: int,
    branch: str,
    keep: list[int],
    why: str = "superseded by a newer push",
) -> int:
    """Cancel the branch's still-queued run jobs (a newer push supersedes them, or their pull
    request was closed), but those in `keep`."""
    result = session.execute(
        update(Job)
        .where(
            Job.repository_id == repository_id,
            Job.branch == branch,
            Job.state == "queued",
            Job.kind == "run",
            Job.id.not_in(keep),
        )
        .values(state="cancelled", finished_at=utcnow(), failure=why)
    )
    return result.rowcount or 0


def cancel_if_queued(session: Session, job_id: int, why: str) -> bool:
    """Cancel one job if no runner has claimed it yet; whether it was."""
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.state == "queued")
        .values(state="cancelled", finished_at=utcnow(), failure=why)
    )
    return bool(result.rowcount)


@dataclass(frozen=True)
class Claim:
    job: Job
    attempt_token: str


def claim(session: Session, runner: Runner, lease_seconds: int) -> Claim | None:
    """Give the oldest queued job this runner's labels allow to it, atomically.

    One UPDATE ... WHERE id = (SELECT ... LIMIT 1) RETURNING: on PostgreSQL the sub-select takes
    FOR UPDATE SKIP LOCKED so concurrent claimers pass over each other's rows; on SQLite the
    single statement runs under the database write lock, and `state = 'queued'` in the outer
    WHERE makes it a compare-and-set. A runner that reported its host unhealthy gets 409.
    """
    if runner.unhealthy_since is not None:
        since = runner.unhealthy_since.isoformat(timespec="seconds")
        raise Conflict(
            f"runner {runner.name} reported at {since} that its host cannot run jobs "
            f"({runner.unhealthy_reason}); it is given jobs again once it registers "
            "(an agent does at start, after its host checks pass)",
        )
    now = utcnow()
    candidate = (
        select(Job.id)
        .where(
            Job.state == "queued",
            Job.label_key.in_(claimable_label_keys(claimable_labels(runner))),
        )
        .order_by(Job.id)
        .limit(1)
    )
    if session.get_bind().dialect.name == "postgresql":
        candidate = candidate.with_for_update(skip_locked=True)
    token = new_token("kwa")
    claimed_id = session.execute(
        update(Job)
        .where(Job.id == candidate.scalar_subquery(), Job.state == "queued")
        .values(
            state="running",
            runner_id=runner.id,
            attempt=Job.attempt + 1,
            attempt_token_hash=token_hash(token),
            started_at=now,
            lease_expires_at=now + timedelta(seconds=lease_seconds),
        )
        .returning(Job.id)
    ).scalar_one_or_none()
    if claimed_id is None:
        return None
    runner.current_job_id = claimed_id
    job = session.get(Job, claimed_id, populate_existing=True)
    assert job is not None
    return Claim(job, token)


def reap(session: Session, now: datetime | None = None) -> int:
    """Requeue running jobs whose lease expired; fail those out of attempts.

    Two guarded UPDATEs rather than read-then-write: each is atomic on its own, so a result
    that lands at the same moment cannot be overwritten on SQLite, which has no row locks.
    """
    now = now or utcnow()
    expired = (Job.state == "running", Job.lease_expires_at < now)
    cleared = {"attempt_token_hash": None, "runner_id": None, "lease_expires_at": None}
    lost = session.execute(
        update(Job)
        .where(*expired, Job.attempt >= Job.max_attempts)
        .values(
            state="failed",
            finished_at=now,
            failure=literal("lease expired; lost after ")
            + cast(Job.attempt, String)
            + literal(" attempts"),
            **cleared,
        )
        .execution_options(synchronize_session=False)
    ).rowcount
    requeued = session.execute(
        update(Job)
        .where(*expired)
        .values(state="queued", failure="the lease of the previous attempt expired", **cleared)
        .execution_options(synchronize_session=False)
    ).rowcount
    return (lost or 0) + (requeued or 0)


def current_attempt(
    session: Session, job_id: int, attempt_token: str, runner: Runner | None
) -> Job:
    """The running job whose current attempt `attempt_token` names, locked, under a lease that
    has not expired; else 409/404."""
    job = session.scalars(select(Job).where(Job.id == job_id).with_for_update()).one_or_none()
    if job is None:
        raise NotFound(f"no job {job_id}")
    if job.state != "running" or job.attempt_token_hash is None:
        raise Conflict(f"job {job_id} is {job.state}, not running: its lease is gone")
    if not same_secret(token_hash(attempt_token), job.attempt_token_hash):
        raise Conflict(
            f"that is not the current attempt of job {job_id} "
            "(the lease expired and the job was requeued or claimed again)",
        )
    if runner is not None and job.runner_id != runner.id:
        raise Conflict(f"job {job_id} is leased to another runner")
    expires = job.lease_expires_at
    if expires is not None and expires <= utcnow():
        # Expired is gone, whether or not the reaper has requeued the job yet.
        raise Conflict(
            f"the lease of job {job_id} expired at {expires.isoformat(timespec='seconds')}: "
            "the job goes back to the queue",
        )
    return job


def _update_attempt(session: Session, job: Job, **values: Any) -> None:
    """Change a job only if its attempt is still the one the caller holds (compare-and-set)."""
    done = session.execute(
        update(Job)
        .where(
            Job.id == job.id,
            Job.state == "running",
            Job.attempt_token_hash == job.attempt_token_hash,
        )
        .values(**values)
        .execution_options(synchronize_session="fetch")
    ).rowcount
    if done != 1:
        raise Conflict(f"job {job.id} changed hands meanwhile: its lease is gone")
    session.refresh(job)


def extend_lease(session: Session, job: Job, lease_seconds: int) -> None:
    _update_attempt(session, job, lease_expires_at=utcnow() + timedelta(seconds=lease_seconds))


def _clear_runner(session: Session, runner_id: int | None, job_id: int) -> None:
    if runner_id is not None:
        session.execute(
            update(Runner)
            .where(Runner.id == runner_id, Runner.current_job_id == job_id)
            .values(current_job_id=None)
            .execution_options(synchronize_session="fetch")
        )


def finish(
    session: Session, job: Job, *, succeeded: bool, failure: str = "", retry: bool = False
) -> None:
    runner_id = job.runner_id
    values: dict[str, Any] = {
        "attempt_token_hash": None,
        "lease_expires_at": None,
        "failure": failure[-20_000:],
    }
    if not succeeded and retry and job.attempt < job.max_attempts:
        values.update(state="queued", runner_id=None)
    else:
        values.update(state="succeeded" if succeeded else "failed", finished_at=utcnow())
    _update_attempt(session, job, **values)
    _clear_runner(session, runner_id, job.id)


def release(session: Session, job: Job) -> None:
    """Hand a job back untouched (a runner stopping): the attempt does not count."""
    runner_id = job.runner_id
    _update_attempt(
        session,
        job,
        state="queued",
        runner_id=None,
        attempt=max(job.attempt - 1, 0),
        attempt_token_hash=None,
        lease_expires_at=None,
    )
    _clear_runner(session, runner_id, job.id)


def cancel(session: Session, job_id: int, note: str) -> Job:
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    runner_id = job.runner_id
    done = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.state.in_(("queued", "running")))
        .values(
            state="cancelled",
            finished_at=utcnow(),
            failure=note,
            attempt_token_hash=None,
            lease_expires_at=None,
        )
        .execution_options(synchronize_session="fetch")
    ).rowcount
    if done != 1:
        session.refresh(job)
        raise Conflict(f"job {job_id} is already {job.state}")
    session.refresh(job)
    _clear_runner(session, runner_id, job_id)
    return job
