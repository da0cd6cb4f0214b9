"""GPU runners: registration, heartbeats, health and the list of them."""

from __future__ import annotations

from fastapi import APIRouter

from service.api.deps import RunnerDep, SessionDep
from service.schemas.jobs import RunnerHealth, RunnerPublic, RunnerRegister
from service.store.jobs import runners
from service.store.reads import queries

router = APIRouter(prefix="/api/v1/runners", tags=["runners"])


@router.post("/register", response_model=RunnerPublic)
def register(body: RunnerRegister, runner: RunnerDep, session: SessionDep) -> RunnerPublic:
    """Record the runner's host, environment and the labels it reports (runner)."""
    runners.register(runner, body.host, body.environment, body.labels)
    public = RunnerPublic.of(runner)
    session.commit()
    return public


@router.post("/heartbeat", response_model=RunnerPublic)
def heartbeat(runner: RunnerDep, session: SessionDep) -> RunnerPublic:
    """Say the runner is alive (runner)."""
    runners.seen(runner)
    public = RunnerPublic.of(runner)
    session.commit()
    return public


@router.post("/health", response_model=RunnerPublic)
def report_health(body: RunnerHealth, runner: RunnerDep, session: SessionDep) -> RunnerPublic:
    """Say whether the runner's host can run jobs; an unhealthy runner is given none (runner)."""
    runners.healthy(runner, body.healthy, body.reason)
    public = RunnerPublic.of(runner)
    session.commit()
    return public


@router.get("", response_model=list[RunnerPublic])
def list_runners(session: SessionDep) -> list[RunnerPublic]:
    """Every runner: last seen, labels, current job."""
    return [RunnerPublic.of(r) for r in queries.runners_by_name(session)]
