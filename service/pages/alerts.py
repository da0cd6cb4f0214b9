"""The alerts page (/alerts and /alerts.json): the alerts grouped by the change that caused
them, each with its attribution, triaged one by one or a group together."""

from __future__ import annotations

from typing import Any, Literal, get_args

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from service.evaluation.alerts.groups import alert_groups
from service.models.alert import ACTIVE_STATES, ALERT_STATES
from service.pages.render import html_page, json_twin
from service.store.alerts.rows import alerts_public
from service.store.reads import dashboard_reads as store
from service.store.reads.queries import repository_named
from service.web.deps import SessionDep

router = APIRouter(tags=["pages"])
# The alert states (the API's) and "all": anything else is a 422, on a page as on its twin.
# (A Literal of the states with "all" first, not a union: the page lists its arguments.)
PageAlertState = Literal[("all", *ALERT_STATES)]  # type: ignore[valid-type]
AlertStates = Query([], description="repeatable; default: suspected, open, acknowledged; all")


def _alerts(
    session: Session,
    states: list[str],
    repository: str | None,
    limit: int,
    fallback: bool = False,
) -> dict[str, Any]:
    """The alerts in `states`, newest first. With `fallback` (no state asked for) and none that
    needs attention, the newest of any state instead, saying so: the page is never blank while
    kernelwatch has found something."""
    repo_id = repository_named(session, repository).id if repository else None
    found = store.alerts(session, states, repo_id, limit)
    notice = None
    if fallback and not found:
        found = store.alerts(session, [], repo_id, limit)
        if found:
            states = []
            notice = ("Nothing needs attention: no alert is suspected, open or acknowledged. "
                      "The most recent alerts of any state:")  # fmt: skip
    alerts = alerts_public(session, found, events=True)
    return {
        "states": states,
        "repository": repository,
        "notice": notice,
        "alerts": [a.model_dump(mode="json") for a in alerts],
        # Each group names its alerts by id: they are listed once, above.
        "groups": [g.model_dump(mode="json", exclude={"alerts"}) for g in alert_groups(alerts)],
    }


def alerts_data(
    session: Session, state: list[PageAlertState], repository: str | None, limit: int
) -> dict[str, Any]:
    """The page's and its twin's data: without a state asked for, what needs attention, or
    else the newest alerts of any state."""
    return _alerts(session, _states(state), repository, limit, fallback=not state)


def _states(state: list[PageAlertState]) -> list[str]:
    if "all" in state:
        return []
    return [s for s in state if s] or list(ACTIVE_STATES)


@router.get("/alerts.json")
def alerts_json(
    session: SessionDep,
    state: list[PageAlertState] = AlertStates,
    repository: str | None = None,
    limit: int = Query(200, ge=1, le=1000),
) -> Response:
    """The alerts page's data, newest first."""
    return json_twin(alerts_data(session, state, repository, limit))


@router.get("/alerts", response_class=HTMLResponse, include_in_schema=False)
def alerts_page(
    request: Request,
    session: SessionDep,
    state: list[PageAlertState] = AlertStates,
    repository: str | None = None,
    limit: int = Query(200, ge=1, le=1000),
) -> HTMLResponse:
    """Alerts: grouped by cause, attribution and triage."""

    def build() -> dict[str, Any]:
        suffix = request.url.query
        data = alerts_data(session, state, repository, limit)
        return {
            "title": "Alerts",
            "json_url": "/alerts.json" + (f"?{suffix}" if suffix else ""),
            "data": data,
            "members": {a["id"]: a for a in data["alerts"]},
            "all_states": list(get_args(PageAlertState)),
            "figures": {},
        }  # fmt: skip

    return html_page(request, "alerts.html", build)
