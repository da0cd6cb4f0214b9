"""Answers of the runs routes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from service.models import Run


class RunStored(BaseModel):
    run_id: str
    stored: bool
    results: int
    detail: str


class RunPublic(BaseModel):
    run_id: str
    repository: str
    commit: str
    suite: str
    branch: str
    status: str
    build_status: str
    fingerprint: str
    gpu_name: str
    job_id: int | None
    started_at: datetime
    finished_at: datetime
    received_at: datetime
    results: int
    environment: dict[str, Any]
    build_log_tail: str
    log_tail: str

    @classmethod
    def from_run(cls, run: Run, *, sha: str, repository: str, results: int) -> RunPublic:
        return cls(
            run_id=run.run_uuid,
            repository=repository,
            commit=sha,
            suite=run.suite,
            branch=run.branch,
            status=run.status,
            build_status=run.build_status,
            fingerprint=run.fingerprint,
            gpu_name=run.gpu_name,
            job_id=run.job_id,
            started_at=run.started_at,
            finished_at=run.finished_at,
            received_at=run.received_at,
            results=results,
            environment=run.environment,
            build_log_tail=run.build_log_tail,
            log_tail=run.log_tail,
        )


class RunListed(BaseModel):
    """A run as a listing shows it; GET /api/v1/runs/{run_id} has the rest."""

    run_id: str
    repository: str
    commit: str
    suite: str
    branch: str
    status: str
    build_status: str
    gpu_name: str
    pull_request: int | None
    started_at: datetime
    finished_at: datetime
    received_at: datetime
    analysed: bool

    @classmethod
    def from_run(cls, run: Run, *, sha: str, repository: str) -> RunListed:
        return cls(
            run_id=run.run_uuid,
            repository=repository,
            commit=sha,
            suite=run.suite,
            branch=run.branch,
            status=run.status,
            build_status=run.build_status,
            gpu_name=run.gpu_name,
            pull_request=run.pull_request,
            started_at=run.started_at,
            finished_at=run.finished_at,
            received_at=run.received_at,
            analysed=run.analysed_at is not None,
        )


class CommitListed(BaseModel):
    """A commit with runs; GET /api/v1/commits/{sha}/metrics has what they measured."""

    sha: str
    repository: str
    subject: str
    author_name: str
    committed_at: datetime
    runs: int
    branches: list[str]
