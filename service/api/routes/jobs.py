"""The job queue as runners and admins see it."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query, Response

from service.api.deps import SHA_PATTERN, AdminDep, RowId, RunnerDep, SessionDep, SettingsDep
from service.core import clone_urls, telemetry
from service.core.errors import InvalidReference, NotFound
from service.models import Job, Repository
from service.models.base import utcnow
from service.schemas.jobs import (
    AttemptBody,
    ClaimedJob,
    FailureBody,
    JobCreate,
    JobPublic,
    JobsQueued,
)
from service.store.jobs import queue, runners
from service.store.reads import queries
from service.store.reads.queries import jobs_public, repository_named
from service.store.upsert import get_or_create

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])

State = Literal["queued", "running", "succeeded", "failed", "cancelled"]


@router.post("", status_code=201, response_model=JobsQueued)
def create_job(
    body: JobCreate, _admin: AdminDep, session: SessionDep, settings: SettingsDep
) -> JobsQueued:
    """Queue a run of one commit by hand (admin)."""
    clone_urls.check(body.clone_url, settings)
    repo = get_or_create(
        session,
        Repository,
        {"name": body.repository},
        clone_url=body.clone_url,
        runner_label_sets=[{}],
        created_at=utcnow(),
    )
    label_sets = [body.labels] if body.labels is not None else repo.runner_label_sets
    jobs = queue.enqueue(
        session,
        repository_id=repo.id,
        sha=body.sha,
        branch=body.branch,
        label_sets=label_sets,
        max_attempts=settings.max_attempts,
        summary="queued by hand",
    )
    ids = [j.id for j in jobs]
    session.commit()
    return JobsQueued(detail=f"queued {len(ids)} job(s)", job_ids=ids)


@router.get("", response_model=list[JobPublic])
def list_jobs(
    session: SessionDep,
    state: State | None = None,
    repository: str | None = None,
    commit: str | None = Query(
        None, description="full sha or a prefix of at least 4", pattern=SHA_PATTERN
    ),
    limit: int = Query(100, ge=1, le=1000),
) -> list[JobPublic]:
    """Jobs, newest first, filtered by state, repository and commit."""
    prefix = commit.lower() if commit else None
    if prefix is not None and (len(prefix) < 4 or any(c not in "0123456789abcdef" for c in prefix)):
        raise InvalidReference("commit must be 4 to 40 hex digits")
    repository_id = repository_named(session, repository).id if repository else None
    jobs = queries.newest_jobs(session, limit, state, repository_id, prefix)
    return jobs_public(session, jobs)


@router.get("/{job_id:int}", response_model=JobPublic)
def get_job(job_id: RowId, session: SessionDep) -> JobPublic:
    """One job."""
    job = queries.get(session, Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    return jobs_public(session, [job])[0]


@router.post(
    "/claim",
    response_model=ClaimedJob,
    responses={204: {"description": "Nothing queued for this runner's labels"}},
)
def claim_job(
    runner: RunnerDep, session: SessionDep, settings: SettingsDep
) -> ClaimedJob | Response:
    """Take the oldest queued job this runner's labels allow, under a lease (runner)."""
    expired = queue.reap(session)
    runners.seen(runner)
    claimed = queue.claim(session, runner, settings.lease_seconds)
    if claimed is None:
        session.commit()
        telemetry.JOBS_EXPIRED.inc(expired)
        return Response(status_code=204)
    repo = queries.get(session, Repository, claimed.job.repository_id)
    assert repo is not None
    public = jobs_public(session, [claimed.job])[0]
    session.commit()
    telemetry.JOBS_EXPIRED.inc(expired)
    telemetry.JOBS_CLAIMED.inc()
    return ClaimedJob(job=public, clone_url=repo.clone_url, attempt_token=claimed.attempt_token)


@router.post("/{job_id:int}/lease", response_model=JobPublic)
def extend_lease(
    job_id: RowId, body: AttemptBody, runner: RunnerDep, session: SessionDep, settings: SettingsDep
) -> JobPublic:
    """Extend the lease of the caller's current attempt (runner)."""
    job = queue.current_attempt(session, job_id, body.attempt_token, runner)
    queue.extend_lease(session, job, settings.lease_seconds)
    runners.seen(runner)
    public = jobs_public(session, [job])[0]
    session.commit()
    return public


@router.post("/{job_id:int}/fail", response_model=JobPublic)
def fail_job(job_id: RowId, body: FailureBody, runner: RunnerDep, session: SessionDep) -> JobPublic:
    """Report that the attempt failed, with the log tail (runner)."""
    job = queue.current_attempt(session, job_id, body.attempt_token, runner)
    queue.finish(session, job, succeeded=False, failure=body.log_tail, retry=body.retry)
    public = jobs_public(session, [job])[0]
    session.commit()
    telemetry.JOBS_FAILED.inc()
    return public


@router.post("/{job_id:int}/release", response_model=JobPublic)
def release_job(
    job_id: RowId, body: AttemptBody, runner: RunnerDep, session: SessionDep
) -> JobPublic:
    """Give the job back unrun, e.g. when the runner is stopping (runner)."""
    job = queue.current_attempt(session, job_id, body.attempt_token, runner)
    queue.release(session, job)
    public = jobs_public(session, [job])[0]
    session.commit()
    return public


@router.post("/{job_id:int}/cancel", response_model=JobPublic)
def cancel_job(job_id: RowId, _admin: AdminDep, session: SessionDep) -> JobPublic:
    """Cancel a queued or running job (admin)."""
    job = queue.cancel(session, job_id, "cancelled by an admin")
    public = jobs_public(session, [job])[0]
    session.commit()
    return public
