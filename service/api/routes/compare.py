"""Two commits compared."""

from __future__ import annotations

from fastapi import APIRouter, Query

from service.api.deps import SHA_PATTERN, SessionDep
from service.evaluation.reads.compare import compare_commits
from service.schemas.alerts import ComparisonPublic

router = APIRouter(prefix="/api/v1/compare", tags=["compare"])


@router.get("", response_model=ComparisonPublic)
def compare(
    session: SessionDep,
    base: str = Query(..., description="full or short sha", pattern=SHA_PATTERN),
    head: str = Query(..., description="full or short sha", pattern=SHA_PATTERN),
    repository: str | None = None,
) -> ComparisonPublic:
    """Every series measured at both commits: change and significance, by impact."""
    return compare_commits(session, base, head, repository)
