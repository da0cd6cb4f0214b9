"""Alerts as the API and the pages show them (shas, series and repository names, events), and
the alerts a group's triage changes."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.models import Alert, AlertEvent, Commit, Repository, Series
from service.schemas.alerts import AlertEventPublic, AlertPublic
from service.store.history.series import series_public


def alerts_public(session: Session, alerts: list[Alert], events: bool = False) -> list[AlertPublic]:
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


def alerts_to_triage(session: Session, ids: list[int]) -> list[Alert]:
    """The alerts of `ids`, by id, locked until the transaction ends (PostgreSQL): two triages of
    one alert at once see each other's state, as the transition rule requires."""
    query = select(Alert).where(Alert.id.in_(set(ids))).order_by(Alert.id).with_for_update()
    return list(session.scalars(query))
