"""Regression alerts: list, read, triage."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query
from sqlalchemy import select

from service.api.deps import AdminDep, RowId, SessionDep
from service.core.errors import ApiError
from service.evaluation.alerts import triage
from service.models import Alert, AlertEvent, Commit, Repository, Series
from service.schemas.alerts import AlertEventPublic, AlertPatch, AlertPublic
from service.store.queries import repository_named
from service.store.series import series_public

router = APIRouter(prefix="/api/v1/alerts", tags=["alerts"])

AlertState = Literal["suspected", "open", "acknowledged", "fixed", "invalid", "dismissed"]


def alerts_public(session, alerts: list[Alert], events: bool = False) -> list[AlertPublic]:
    commit_ids = {
        c
        for a in alerts
        for c in (a.commit_id, a.base_commit_id, a.first_bad_commit_id, a.fixed_by_commit_id)
        if c
    }
    shas = dict(
        session.execute(select(Commit.id, Commit.sha).where(Commit.id.in_(commit_ids))).all()
    )
    series = {
        s.id: s
        for s in session.scalars(select(Series).where(Series.id.in_({a.series_id for a in alerts})))
    }
    repos = dict(
        session.execute(
            select(Repository.id, Repository.name).where(
                Repository.id.in_({a.repository_id for a in alerts})
            )
        ).all()
    )
    history: dict[int, list[AlertEventPublic]] = {a.id: [] for a in alerts}
    if events:
        for e in session.scalars(
            select(AlertEvent).where(AlertEvent.alert_id.in_(history)).order_by(AlertEvent.id)
        ):
            history[e.alert_id].append(
                AlertEventPublic(
                    from_state=e.from_state,
                    to_state=e.to_state,
                    actor=e.actor,
                    note=e.note,
                    at=e.at,
                )
            )
    return [
        AlertPublic(
            id=a.id,
            state=a.state,
            summary=a.summary,
            change=a.change,
            confirmed_change=a.confirmed_change,
            series=series_public(series[a.series_id], repos[a.repository_id]),
            branch=a.branch,
            commit=shas[a.commit_id],
            base_commit=shas.get(a.base_commit_id),
            first_bad_commit=shas.get(a.first_bad_commit_id),
            fixed_by_commit=shas.get(a.fixed_by_commit_id),
            confirm_job_id=a.confirm_job_id,
            attribution=a.attribution,
            bisect=a.bisect or {},
            note=a.note,
            updated_by=a.updated_by,
            created_at=a.created_at,
            updated_at=a.updated_at,
            events=history[a.id],
        )
        for a in alerts
    ]


@router.get("", response_model=list[AlertPublic])
def list_alerts(
    session: SessionDep,
    state: list[AlertState] | None = Query(None, description="repeatable; default: all"),
    repository: str | None = None,
    limit: int = Query(100, ge=1, le=1000),
) -> list[AlertPublic]:
    """Alerts, newest first."""
    query = select(Alert).order_by(Alert.id.desc()).limit(limit)
    if state:
        query = query.where(Alert.state.in_(state))
    if repository:
        query = query.where(Alert.repository_id == repository_named(session, repository).id)
    return alerts_public(session, list(session.scalars(query)))


@router.get("/{alert_id}", response_model=AlertPublic)
def get_alert(alert_id: RowId, session: SessionDep) -> AlertPublic:
    """One alert with its attribution and history."""
    alert = session.get(Alert, alert_id)
    if alert is None:
        raise ApiError(404, f"no alert {alert_id}")
    return alerts_public(session, [alert], events=True)[0]


@router.patch("/{alert_id}", response_model=AlertPublic)
def triage_alert(
    alert_id: RowId, body: AlertPatch, _admin: AdminDep, session: SessionDep
) -> AlertPublic:
    """Acknowledge, mark fixed or invalid, or reopen an alert, with a note (admin)."""
    alert = session.get(Alert, alert_id)
    if alert is None:
        raise ApiError(404, f"no alert {alert_id}")
    if alert.state in ("suspected", "dismissed") and body.state != "invalid":
        raise ApiError(
            409,
            f"alert {alert_id} is {alert.state}: only confirmed alerts are "
            "triaged (it can still be marked invalid)",
        )
    triage(session, alert, body.state, body.actor, body.note)
    session.commit()
    return alerts_public(session, [alert], events=True)[0]
