"""The dashboards: server-rendered pages, each with a JSON twin at the same path + `.json`.

    /                  /index.json         overview
    /trends?...        /trends.json?...    (and /trends.csv?...) one metric along a branch
    /commits/{sha}     /commits/{sha}.json everything measured at a commit
    /compare?base=&head=  /compare.json?...
    /alerts?...        /alerts.json?...

JSON twins are declared before the pages: `/commits/{sha}` would otherwise match `abc.json`.
Pages answer errors as a readable HTML page; twins as {"detail": ...} like the rest of the API.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from pydantic import Field
from sqlalchemy.orm import Session

from dashboards.figures import trend_figure
from service.api import page_views as views
from service.api.deps import MAX_ID, SessionDep
from service.api.trend_view import TrendQuery, trend_csv, trend_view
from service.core.errors import ApiError
from service.pages.render import error_page, plotly_js, render
from service.store.pages import ACTIVE_ALERT_STATES

router = APIRouter(tags=["pages"])


def trend_query(
    repository: str | None = None,
    branch: str | None = None,
    metric: str = Query("duration", max_length=200),
    workload: list[str] = Query([], description="repeatable; default: every workload"),
    kernel: list[str] = Query([], description="repeatable; default: every kernel"),
    fingerprint: str | None = None,
    series: list[Annotated[int, Field(ge=1, le=MAX_ID)]] = Query(
        [], description="repeatable series ids; overrides the filters"
    ),
    points: int = Query(200, ge=2, le=1000, description="newest commits per series"),
    log: bool = Query(False, description="logarithmic y axis"),
) -> TrendQuery:
    return TrendQuery(
        repository=repository or None,
        branch=branch or None,
        metric=metric,
        workload=[w for w in workload if w],
        kernel=[k for k in kernel if k],
        fingerprint=fingerprint or None,
        series=series,
        points=points,
        log=log,
    )


TrendQueryDep = Annotated[TrendQuery, Depends(trend_query)]
# The alert states (the API's) and "all": anything else is a 422, on a page as on its twin.
PageAlertState = Literal[
    "all", "suspected", "open", "acknowledged", "fixed", "invalid", "dismissed"
]
AlertStates = Query([], description="repeatable; default: suspected, open, acknowledged; all")


def _json(data: dict[str, Any]) -> Response:
    """A page's JSON twin. orjson writes the plain data (datetimes, dataclasses included) many
    times faster than jsonable_encoder walks it (a trends page's: 58 ms); models and anything
    else orjson does not know go through jsonable_encoder."""
    return Response(
        orjson.dumps(data, default=jsonable_encoder, option=orjson.OPT_NON_STR_KEYS),
        media_type="application/json",
    )


def _page(request: Request, template: str, build: Callable[[], dict[str, Any]]) -> HTMLResponse:
    try:
        context = build()
    except ApiError as exc:
        return error_page(request, exc)
    return render(request, template, context)


@router.get("/static/vendor/plotly.min.js", include_in_schema=False)
def plotly_bundle() -> FileResponse:
    """plotly.js from the installed plotly package (no CDN)."""
    return FileResponse(
        plotly_js(),
        media_type="text/javascript",
        headers={"Cache-Control": "public, max-age=86400"},
    )


# --- JSON twins and CSV -------------------------------------------------------------------------


@router.get("/index.json")
def overview_json(session: SessionDep) -> JSONResponse:
    """The overview page's data: branches, recent runs, active alerts, runners, queue."""
    return _json(views.overview(session)[0])


@router.get("/trends.json")
def trends_json(session: SessionDep, q: TrendQueryDep) -> JSONResponse:
    """The trends page's data: the resolved choices and each chosen series' history."""
    return _json(trend_view(session, q).data)


@router.get("/trends.csv", response_class=Response)
def trends_csv(session: SessionDep, q: TrendQueryDep) -> Response:
    """The trends page's points as CSV, one row per series and commit."""
    view = trend_view(session, q)
    name = f"kernelwatch-{q.repository or 'none'}-{q.branch or 'none'}-{q.metric}"
    # A header is latin-1 and the name is quoted: anything else in a branch or metric becomes _.
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return Response(
        trend_csv(view.histories),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


@router.get("/commits/{sha}.json")
def commit_json(
    sha: str, session: SessionDep, repository: str | None = None, branch: str | None = None
) -> JSONResponse:
    """The commit page's data: the commit's metrics, derived rows and its runs' details."""
    return _json(views.commit_page(session, sha, repository, branch)[0])


@router.get("/compare.json")
def compare_json(
    session: SessionDep,
    base: str | None = None,
    head: str | None = None,
    repository: str | None = None,
) -> JSONResponse:
    """The compare page's data; without base and head, recent commits to pick from."""
    return _json(views.compare_page(session, base, head, repository)[0])


@router.get("/alerts.json")
def alerts_json(
    session: SessionDep,
    state: list[PageAlertState] = AlertStates,
    repository: str | None = None,
    limit: int = Query(200, ge=1, le=1000),
) -> JSONResponse:
    """The alerts page's data, newest first."""
    return _json(alerts_data(session, state, repository, limit))


def alerts_data(
    session: Session, state: list[PageAlertState], repository: str | None, limit: int
) -> dict[str, Any]:
    """The page's and its twin's data: without a state asked for, what needs attention, or
    else the newest alerts of any state."""
    return views.alerts_page(session, _states(state), repository, limit, fallback=not state)


def _states(state: list[PageAlertState]) -> list[str]:
    if "all" in state:
        return []
    return [s for s in state if s] or list(ACTIVE_ALERT_STATES)


# --- pages --------------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def overview_page(request: Request, session: SessionDep) -> HTMLResponse:
    """Overview: repositories and branches, latest runs, open alerts, runners and queue."""

    def build() -> dict[str, Any]:
        data, figures = views.overview(session)
        return {"title": "Overview", "json_url": "/index.json", "data": data, "figures": figures}

    return _page(request, "overview.html", build)


@router.get("/trends", response_class=HTMLResponse, include_in_schema=False)
def trends_page(request: Request, session: SessionDep, q: TrendQueryDep) -> HTMLResponse:
    """Trends: one metric of the chosen series along a branch."""

    def build() -> dict[str, Any]:
        view = trend_view(session, q)
        drawable = view.data["message"] is None
        figures = {"trend": trend_figure(view.lines, metric=q.metric, log_y=q.log)}
        return {
            "title": "Trends",
            "json_url": f"/trends.json?{q.query_string()}",
            "csv_url": f"/trends.csv?{q.query_string()}",
            "q": q,
            "data": view.data,
            "figures": figures if drawable else {},
        }

    return _page(request, "trends.html", build)


@router.get("/commits/{sha}", response_class=HTMLResponse, include_in_schema=False)
def commit_page(
    request: Request,
    sha: str,
    session: SessionDep,
    repository: str | None = None,
    branch: str | None = None,
) -> HTMLResponse:
    """Commit: every workload and kernel measured at a commit."""

    def build() -> dict[str, Any]:
        data, figures = views.commit_page(session, sha, repository, branch)
        suffix = request.url.query
        return {
            "title": f"Commit {sha[:10]}",
            "json_url": f"/commits/{sha}.json" + (f"?{suffix}" if suffix else ""),
            "data": data,
            "figures": figures,
        }

    return _page(request, "commit.html", build)


@router.get("/compare", response_class=HTMLResponse, include_in_schema=False)
def compare_page(
    request: Request,
    session: SessionDep,
    base: str | None = None,
    head: str | None = None,
    repository: str | None = None,
) -> HTMLResponse:
    """Compare: two commits side by side, by impact."""

    def build() -> dict[str, Any]:
        data, figures = views.compare_page(session, base, head, repository)
        suffix = request.url.query
        return {
            "title": "Compare",
            "json_url": "/compare.json" + (f"?{suffix}" if suffix else ""),
            "data": data,
            "figures": figures,
            "repository": repository,
        }

    return _page(request, "compare.html", build)


@router.get("/alerts", response_class=HTMLResponse, include_in_schema=False)
def alerts_page(
    request: Request,
    session: SessionDep,
    state: list[PageAlertState] = AlertStates,
    repository: str | None = None,
    limit: int = Query(200, ge=1, le=1000),
) -> HTMLResponse:
    """Alerts: list, attribution and triage."""

    def build() -> dict[str, Any]:
        suffix = request.url.query
        return {
            "title": "Alerts",
            "json_url": "/alerts.json" + (f"?{suffix}" if suffix else ""),
            "data": alerts_data(session, state, repository, limit),
            "all_states": list(get_args(PageAlertState)),
            "figures": {},
        }  # fmt: skip

    return _page(request, "alerts.html", build)
