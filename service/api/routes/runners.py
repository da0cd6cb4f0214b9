"""GPU runners: registration, heartbeats, health and the list of them."""

from __future__ import annotations

from fastapi import APIRouter

from service.api.deps import RunnerDep, SessionDep
from service.models.base import utcnow
from service.schemas.jobs import RunnerHealth, RunnerPublic, RunnerRegister
from service.store.reads import queries

router = APIRouter(prefix="/api/v1/runners", tags=["runners"])


@router.post("/register", response_model=RunnerPublic)
def register(body: RunnerRegister, runner: RunnerDep, session: SessionDep) -> RunnerPublic:
    """Record the runner's host, environment and the labels it reports (runner)."""
    runner.host = body.host
    runner.environment = body.environment
    # Kept apart from the token's labels: a report narrows what the runner claims, never widens.
    runner.reported_labels = body.labels
    runner.last_seen_at = utcnow()
    # An agent registers once its host checks have passed: an earlier fault is over.
    runner.unhealthy_since, runner.unhealthy_reason = None, ""
    public = RunnerPublic.of(runner)
    session.commit()
    return public


@router.post("/heartbeat", response_model=RunnerPublic)
def heartbeat(runner: RunnerDep, session: SessionDep) -> RunnerPublic:
    """Say the runner is alive (runner)."""
    runner.last_seen_at = utcnow()
    public = RunnerPublic.of(runner)
    session.commit()
    return public


@router.post("/health", response_model=RunnerPublic)
def report_health(body: RunnerHealth, runner: RunnerDep, session: SessionDep) -> RunnerPublic:
    """Say whether the runner's host can run jobs; an unhealthy runner is given none (runner)."""
    now = utcnow()
    runner.last_seen_at = now
    if body.healthy:
        runner.unhealthy_since, runner.unhealthy_reason = None, ""
    else:
        runner.unhealthy_since = runner.unhealthy_since or now
        runner.unhealthy_reason = body.reason.strip()
    public = RunnerPublic.of(runner)
    session.commit()
    return public


@router.get("", response_model=list[RunnerPublic])
def list_runners(session: SessionDep) -> list[RunnerPublic]:
    """Every runner: last seen, labels, current job."""
    return [RunnerPublic.of(r) for r in queries.runners_by_name(session)]
