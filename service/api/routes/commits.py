"""Everything measured at one commit."""

from __future__ import annotations

from fastapi import APIRouter, Query, Response

from service.api.deps import SessionDep, ShaPath
from service.evaluation.reads.commit_metrics import as_json, commit_metrics_at
from service.evaluation.reads.commit_ncu import SUMMARY
from service.schemas.metrics import CommitMetrics, NcuDetail
from service.schemas.runs import CommitListed
from service.store.reads import listings
from service.store.reads.queries import repository_named

router = APIRouter(prefix="/api/v1/commits", tags=["commits"])


@router.get("", response_model=list[CommitListed])
def list_commits(
    session: SessionDep,
    repository: str | None = None,
    branch: str | None = Query(None, description="only commits measured on this branch"),
    limit: int = Query(100, ge=1, le=1000),
) -> list[CommitListed]:
    """Commits that have runs, newest committed first, with their run counts and branches."""
    repository_id = repository_named(session, repository).id if repository else None
    rows = listings.newest_commits(session, limit, repository_id, branch)
    return [CommitListed(**row) for row in rows]


@router.get("/{sha}/metrics", response_model=CommitMetrics)
def get_commit_metrics(
    sha: ShaPath,
    session: SessionDep,
    repository: str | None = Query(None, description="owner/name, when a sha is in several"),
    branch: str | None = Query(
        None,
        description="default: the newest run's branch; 404 where the repository has no runs on it",
    ),
    ncu: NcuDetail = Query(
        "summary",
        description="how much of each kernel's Nsight Compute capture `ncu_metrics` and "
        "`ncu_findings` carry: `summary` (default) the values of "
        f"{', '.join(f'`{name}`' for name in SUMMARY)} that the capture holds, and every finding; "
        "`all` every value the runner sent (some 70 a kernel: the commit page's table); `none` "
        "neither (empty), the quickest answer",
    ),
) -> Response:
    """Every workload × kernel × metric at a commit, with baseline and change, and as much of
    each kernel's ncu capture as `ncu` asks for."""
    data = commit_metrics_at(session, sha, repository, branch, ncu=ncu, raw_ncu=True)
    # Written straight from plain data (see commit_metrics_data); tests hold it to the model.
    return Response(as_json(data), media_type="application/json")
