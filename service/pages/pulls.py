"""Pull requests: each PR measured, its newest head against its merge base.

/pulls[?repository=&state=]      /pulls.json[?...]
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.models import Commit, PullRequest, Repository, Run, Verdict
from service.models.pull_request import pull_branch
from service.pages.render import json_twin, render
from service.web.deps import SessionDep

router = APIRouter(tags=["pages"])
PullState = Literal["open", "closed", "merged", "all"]


def pulls_data(
    session: Session, repository: str | None, state: PullState, limit: int
) -> dict[str, Any]:
    """The PRs, newest activity first, each with its head's newest run and verdict counts."""
    query = (
        select(PullRequest, Repository.name)
        .join(Repository, Repository.id == PullRequest.repository_id)
        .order_by(PullRequest.updated_at.desc(), PullRequest.id.desc())
        .limit(limit)
    )
    if repository:
        query = query.where(Repository.name == repository)
    if state != "all":
        query = query.where(PullRequest.state == state)
    rows = []
    for pr, repo in session.execute(query).all():
        run = session.execute(
            select(Run)
            .join(Commit, Commit.id == Run.commit_id)
            .where(
                Run.repository_id == pr.repository_id,
                Run.branch == pull_branch(pr.number),
                Commit.sha == pr.head_sha,
            )
            .order_by(Run.id.desc())
            .limit(1)
        ).scalar_one_or_none()
        counts: Counter[str] = Counter()
        if run is not None:
            counts.update(
                dict(
                    session.execute(
                        select(Verdict.verdict, func.count())
                        .where(Verdict.run_id == run.id)
                        .group_by(Verdict.verdict)
                    ).all()
                )
            )
        rows.append(
            {
                "repository": repo,
                "number": pr.number,
                "title": pr.title,
                "state": pr.state,
                "base_ref": pr.base_ref,
                "head": pr.head_sha,
                "merge_base": run.merge_base_sha if run else None,
                "run_id": run.run_uuid if run else None,
                "analysed": bool(run and run.analysed_at),
                "verdict_counts": dict(counts),
                "updated_at": pr.updated_at,
                "branch": pull_branch(pr.number),
            }
        )
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
