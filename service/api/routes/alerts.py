"""Regression alerts: list, read, triage; grouped by the change that caused them."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query

from service.api.deps import MAX_ID, SHA_PATTERN, AdminDep, RowId, SessionDep
from service.core.errors import NotFound
from service.evaluation.alerts.groups import alert_groups, triage_together
from service.evaluation.alerts.lifecycle import triage
from service.models import Alert
from service.models.alert import AlertState
from service.schemas.alerts import AlertGroupPublic, AlertGroupTriage, AlertPatch, AlertPublic
from service.store.alerts.rows import alerts_public
from service.store.reads import dashboard_reads, queries
from service.store.reads.queries import repository_named

router = APIRouter(prefix="/api/v1/alerts", tags=["alerts"])


@router.get("", response_model=list[AlertPublic])
def list_alerts(
    session: SessionDep,
    state: list[AlertState | Literal["all"]] | None = Query(
        None, description="repeatable; default (or all): every state"
    ),
    repository: str | None = None,
    commit: str | None = Query(
        None,
        description="full sha or a prefix of at least 4: the alerts found at that commit or "
        "bisected to it",
        pattern=SHA_PATTERN,
    ),
    series: int | None = Query(None, ge=1, le=MAX_ID, description="one series' alerts"),
    limit: int = Query(100, ge=1, le=1000),
) -> list[AlertPublic]:
    """Alerts, newest first, filtered by state, repository, commit and series."""
    repository_id = repository_named(session, repository).id if repository else None
    states = [] if not state or "all" in state else list(state)
    prefix = commit.lower() if commit else None
    alerts = dashboard_reads.alerts(session, states, repository_id, limit, prefix, series)
    return alerts_public(session, alerts)


# Before /{alert_id}, which would take "groups" for an id.
@router.get("/groups", response_model=list[AlertGroupPublic])
def list_alert_groups(
    session: SessionDep,
    state: list[AlertState] | None = Query(None, description="repeatable; default: all"),
    repository: str | None = None,
    limit: int = Query(100, ge=1, le=1000, description="the newest alerts grouped"),
) -> list[AlertGroupPublic]:
    """The newest alerts grouped by the commit, kernel and cause they share, one headline each."""
    repository_id = repository_named(session, repository).id if repository else None
    alerts = dashboard_reads.alerts(session, list(state or []), repository_id, limit)
    return alert_groups(alerts_public(session, alerts))


@router.post("/groups/triage", response_model=list[AlertPublic])
def triage_alert_group(
    body: AlertGroupTriage, _admin: AdminDep, session: SessionDep
) -> list[AlertPublic]:
    """Triage a group's alerts together, all of them or none (admin)."""
    alerts = triage_together(session, body.alert_ids, body.state, body.actor, body.note)
    session.commit()
    return alerts_public(session, alerts, events=True)


@router.get("/{alert_id:int}", response_model=AlertPublic)
def get_alert(alert_id: RowId, session: SessionDep) -> AlertPublic:
    """One alert with its attribution and history."""
    alert = queries.get(session, Alert, alert_id)
    if alert is None:
        raise NotFound(f"no alert {alert_id}")
    return alerts_public(session, [alert], events=True)[0]


@router.patch("/{alert_id:int}", response_model=AlertPublic)
def triage_alert(
    alert_id: RowId, body: AlertPatch, _admin: AdminDep, session: SessionDep
) -> AlertPublic:
    """Acknowledge, mark fixed or invalid, or reopen an alert, with a note (admin)."""
    alert = queries.get(session, Alert, alert_id)
    if alert is None:
        raise NotFound(f"no alert {alert_id}")
    triage(session, alert, body.state, body.actor, body.note)
    session.commit()
    return alerts_public(session, [alert], events=True)[0]
