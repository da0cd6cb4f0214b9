"""Everything measured at one commit."""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Query, Response

from service.api.deps import SessionDep, ShaPath
from service.evaluation.commit_metrics import commit_metrics_data
from service.schemas.metrics import CommitMetrics
from service.store.commits import resolve_commit

router = APIRouter(prefix="/api/v1/commits", tags=["commits"])


@router.get("/{sha}/metrics", response_model=CommitMetrics)
def get_commit_metrics(
    sha: ShaPath,
    session: SessionDep,
    repository: str | None = Query(None, description="owner/name, when a sha is in several"),
    branch: str | None = Query(None, description="default: the branch of the newest run"),
) -> Response:
    """Every workload × kernel × metric at a commit, with baseline and change."""
    commit, repo_name = resolve_commit(session, sha, repository)
    # Written straight from plain data (see commit_metrics_data); tests hold it to the model.
    return Response(
        orjson.dumps(
            commit_metrics_data(session, commit, repo_name, branch, raw_ncu=True),
            option=orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS,
        ),
        media_type="application/json",
    )
