"""The compare page (/compare?base=&head= and /compare.json): two commits side by side, by
impact; without both, recent commits to pick from."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from dashboards.figures import change_figure
from dashboards.format import fmt_value, series_label, short_sha
from dashboards.model import ChangeBar
from service.analysis.verdicts import Q, class_target
from service.evaluation.reads.compare import compare_commits
from service.pages.render import html_page, json_twin
from service.store.reads import dashboard_reads as store
from service.store.reads.queries import repository_named
from service.web.deps import SHA_PATTERN, SessionDep

router = APIRouter(tags=["pages"])
MAX_BARS = 40


def compare_data(
    session: Session, base: str | None, head: str | None, repository: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two commits side by side; without both, suggestions of recent commits."""
    if not base or not head:
        repo_id = repository_named(session, repository).id if repository else None
        recent = store.recent_commits(session, repo_id)
        return {"base": base, "head": head, "suggestions": recent, "comparison": None}, {}
    comparison = compare_commits(session, base, head, repository)
    bars = [
        ChangeBar(
            series_label(r.series.workload, r.series.params, r.series.kernel),
            r.change,
            ("regressed" if r.change > 0 else "improved") if r.significant else "unchanged",
            f"{fmt_value(r.base_median, r.series.unit)} → {fmt_value(r.head_median, r.series.unit)}"
            f" · q={r.q_value:.2g}",
            class_target(r.base_median) if r.series.unit == "us" and r.base_median else None,
        )
        for r in comparison.rows[:MAX_BARS]
    ]
    data = {
        "base": base,
        "head": head,
        "q_threshold": Q,
        "comparison": comparison.model_dump(mode="json"),
    }
    title = f"{short_sha(comparison.base)} → {short_sha(comparison.head)}"
    return data, ({"changes": change_figure(bars, title=title)} if bars else {})


@router.get("/compare.json")
def compare_json(
    session: SessionDep,
    base: Annotated[str | None, Query(pattern=SHA_PATTERN)] = None,
    head: Annotated[str | None, Query(pattern=SHA_PATTERN)] = None,
    repository: str | None = None,
) -> Response:
    """The compare page's data; without base and head, recent commits to pick from."""
    return json_twin(compare_data(session, base, head, repository)[0])


@router.get("/compare", response_class=HTMLResponse, include_in_schema=False)
def compare_page(
    request: Request,
    session: SessionDep,
    base: Annotated[str | None, Query(pattern=SHA_PATTERN)] = None,
    head: Annotated[str | None, Query(pattern=SHA_PATTERN)] = None,
    repository: str | None = None,
) -> HTMLResponse:
    """Compare: two commits side by side, by impact."""

    def build() -> dict[str, Any]:
        data, figures = compare_data(session, base, head, repository)
        suffix = request.url.query
        return {
            "title": "Compare",
            "json_url": "/compare.json" + (f"?{suffix}" if suffix else ""),
            "data": data,
            "figures": figures,
            "repository": repository,
        }

    return html_page(request, "compare.html", build)
