"""History of one series along a branch."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Query
from sqlalchemy.orm import Session

from service.api.body import check_depth, too_deep
from service.api.deps import MAX_ID, SessionDep
from service.core.errors import InvalidReference
from service.evaluation.reads.work_history import work_history
from service.models import Series
from service.schemas.metrics import SeriesHistory, WorkHistory
from service.store.history.series import default_branch, find_series, history
from service.store.reads.queries import check_branch

router = APIRouter(prefix="/api/v1/series", tags=["series"])
BRANCH = "default: the newest result's branch; 404 where the repository has no runs on it"


def _branch(session: Session, series: Series, repository: str, branch: str | None) -> str:
    """The branch asked for, which the repository must have runs on, or the newest result's."""
    if branch is None:
        return default_branch(session, series)
    check_branch(session, series.repository_id, repository, branch)
    return branch


def _parse_params(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidReference(f"workload_params must be a JSON object: {exc.msg}") from exc
    except RecursionError:
        raise too_deep("workload_params") from None
    check_depth(value, "workload_params")
    if not isinstance(value, dict):
        raise InvalidReference('workload_params must be a JSON object, e.g. {"m":1024}')
    return value


@router.get("", response_model=SeriesHistory)
def get_series(
    session: SessionDep,
    id: int | None = Query(
        None, ge=1, le=MAX_ID, description="series id (from a commit's metrics)"
    ),
    repository: str | None = None,
    suite: str | None = None,
    workload: str | None = None,
    kernel: str | None = None,
    metric: str | None = Query(None, description="e.g. duration"),
    fingerprint: str | None = None,
    method: str | None = Query(
        None, description="timing method: cuda_events, cupti or host (a change starts a series)"
    ),
    workload_params: str | None = Query(
        None, description='workload parameters as JSON, {"m":1024} (empty: any)'
    ),
    # Its older name, kept for the links and scripts that use it; not described, because
    # generated clients name their own query dict `params` (openapi-python-client did).
    params: str | None = Query(None, include_in_schema=False),
    branch: str | None = Query(None, description=BRANCH),
    limit: int = Query(1000, ge=1, le=10_000),
    samples: bool = Query(False, description="include raw samples"),
) -> SeriesHistory:
    """One series' results along a branch with their verdicts, oldest commit first."""
    filters = {
        "repository": repository,
        "suite": suite,
        "workload": workload,
        "kernel": kernel,
        "metric": metric,
        "fingerprint": fingerprint,
        "method": method,
    }
    if params is not None and workload_params is not None and params != workload_params:
        raise InvalidReference("workload_params and params (its older name) differ: give one")
    given = workload_params if workload_params is not None else params
    given = given or None  # empty: parameters of any value
    if id is None and all(v is None for v in filters.values()) and given is None:
        raise InvalidReference("name a series: id=, or repository=/workload=/kernel=/metric=")
    series, repo_name = find_series(
        session, series_id=id, filters=filters, params=_parse_params(given)
    )
    branch = _branch(session, series, repo_name, branch)
    return history(session, series, repo_name, branch, limit, samples)


@router.get("/work", response_model=WorkHistory)
def get_work(
    session: SessionDep,
    id: int = Query(
        ..., ge=1, le=MAX_ID, description="the timing series (from a commit's metrics)"
    ),
    kernel: str | None = Query(None, description="one kernel of the workload; default: all"),
    branch: str | None = Query(None, description=BRANCH),
    limit: int = Query(1000, ge=1, le=10_000),
) -> WorkHistory:
    """The work counters of a series' kernels along a branch, with their verdicts."""
    series, repo_name = find_series(session, series_id=id, filters={}, params=None)
    branch = _branch(session, series, repo_name, branch)
    return work_history(session, series, repo_name, branch, limit, kernel)
