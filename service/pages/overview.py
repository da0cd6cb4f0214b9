"""The overview page (/ and /index.json): repositories and branches, recent runs, active
alerts, runners and the queue."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from dashboards.figures import verdict_history_figure
from dashboards.format import short_sha
from dashboards.model import VerdictColumn
from service.pages.render import html_page, json_twin
from service.schemas.jobs import RunnerPublic
from service.store.alerts.rows import alerts_public
from service.store.reads import dashboard_reads as store
from service.store.reads.queries import jobs_public
from service.web.deps import SessionDep

router = APIRouter(tags=["pages"])


def overview(session: Session) -> tuple[dict[str, Any], dict[str, Any]]:
    """Repositories and branches, recent runs, active alerts, runners and the queue."""
    runs = store.recent_runs(session)
    counts, jobs = store.queue(session)
    alerts = alerts_public(session, store.active_alerts(session))
    data = {
        "branches": [vars(b) for b in store.branches(session)],
        "branch_window": store.BRANCH_WINDOW,
        "recent_runs": [vars(r) for r in runs],
        "alerts": [a.model_dump(mode="json") for a in alerts],
        "runners": [RunnerPublic.of(r).model_dump(mode="json") for r in store.runners(session)],
        "queue": {
            "counts": counts,
            "jobs": [j.model_dump(mode="json") for j in jobs_public(session, jobs)],
        },
    }
    figures = {}
    if runs:
        columns, seen = [], set()
        for r in reversed(runs):
            label = short_sha(r.sha)[:7]
            while label in seen:  # a category axis would merge two runs of one commit
                label += "·"
            seen.add(label)
            columns.append(VerdictColumn(r.sha, label, r.verdicts, r.bisected))
        figures["verdicts"] = verdict_history_figure(columns)
    return data, figures


@router.get("/index.json")
def overview_json(session: SessionDep) -> Response:
    """The overview page's data: branches, recent runs, active alerts, runners, queue."""
    return json_twin(overview(session)[0])


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def overview_page(request: Request, session: SessionDep) -> HTMLResponse:
    """Overview: repositories and branches, latest runs, open alerts, runners and queue."""

    def build() -> dict[str, Any]:
        data, figures = overview(session)
        return {"title": "Overview", "json_url": "/index.json", "data": data, "figures": figures}

    return html_page(request, "overview.html", build)
