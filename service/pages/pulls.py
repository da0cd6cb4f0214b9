"""Pull requests: each PR measured, its newest head against its merge base.

/pulls[?repository=&state=]      /pulls.json[?...]
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from service.models.pull_request import pull_branch
from service.pages.render import json_twin, render
from service.store.reads import pull_reads
from service.web.deps import SessionDep

router = APIRouter(tags=["pages"])
PullState = Literal["open", "closed", "merged", "all"]


def pulls_data(
    session: Session, repository: str | None, state: PullState, limit: int
) -> dict[str, Any]:
    """The PRs, newest activity first, each with its head's newest run and verdict counts."""
    rows = [
        {
            "repository": row.repository,
            "number": row.pull.number,
            "title": row.pull.title,
            "state": row.pull.state,
            "base_ref": row.pull.base_ref,
            "head": row.pull.head_sha,
            "merge_base": row.merge_base,
            "run_id": row.run_uuid,
            "analysed": row.analysed,
            "verdict_counts": row.verdict_counts,
            "updated_at": row.pull.updated_at,
            "branch": pull_branch(row.pull.number),
        }
        for row in pull_reads.pulls(session, repository, state, limit)
    ]
    return {"repository": repository, "state": state, "pulls": rows}


@router.get("/pulls.json")
def pulls_json(
    session: SessionDep,
    repository: str | None = None,
    state: PullState = "all",
    limit: int = Query(200, ge=1, le=1000),
) -> Response:
    """The pull requests page's data."""
    data = pulls_data(session, repository, state, limit)
    return json_twin(data)


@router.get("/pulls", response_class=HTMLResponse, include_in_schema=False)
def pulls_page(
    request: Request,
    session: SessionDep,
    repository: str | None = None,
    state: PullState = "all",
    limit: int = Query(200, ge=1, le=1000),
) -> HTMLResponse:
    """Pull requests: each head against its merge base."""
    suffix = request.url.query
    context = {
        "title": "Pull requests",
        "json_url": "/pulls.json" + (f"?{suffix}" if suffix else ""),
        "data": pulls_data(session, repository, state, limit),
        "figures": {},
    }
    return render(request, "pulls.html", context)
