"""Alert groups as the API and the pages show them (service.analysis.alert_groups groups the
alerts), and a group's triage: every alert of it moved by the one rule a single alert's triage
follows (service.evaluation.alerts.lifecycle), or none."""

from __future__ import annotations

from sqlalchemy.orm import Session

from service.analysis.alert_groups import AlertFacts, cause_name, group_alerts, top_cause
from service.core.errors import Conflict, NotFound
from service.evaluation.alerts.lifecycle import refusal, triage
from service.evaluation.verdicts.notes import describe_workload
from service.models import Alert
from service.schemas.alerts import AlertGroupKey, AlertGroupPublic, AlertPublic
from service.store.alerts.rows import alerts_to_triage


def facts(alert: AlertPublic) -> AlertFacts:
    kernel, kind = top_cause(alert.attribution) or (None, None)
    return AlertFacts(
        id=alert.id,
        repository=alert.series.repository,
        branch=alert.branch,
        commit=alert.commit,
        first_bad_commit=alert.first_bad_commit,
        kernel=kernel,
        cause=kind,
        workload=alert.series.workload,
        change=alert.change,
        summary=alert.summary,
        described=describe_workload(alert.series.workload, alert.series.params),
    )


def alert_groups(alerts: list[AlertPublic]) -> list[AlertGroupPublic]:
    """`alerts` grouped, the group of the newest alert first."""
    by_id = {a.id: a for a in alerts}
    return [
        AlertGroupPublic(
            headline=g.headline,
            key=AlertGroupKey(
                repository=g.key.repository,
                branch=g.key.branch,
                commit=g.key.commit,
                kernel=g.key.kernel,
                cause=g.key.cause,
            ),
            cause=cause_name(g.key.cause) if g.key.cause else None,
            alert_ids=[a.id for a in g.alerts],
            states=list(dict.fromkeys(by_id[a.id].state for a in g.alerts)),
            alerts=[by_id[a.id] for a in g.alerts],
        )
        for g in group_alerts(facts(a) for a in alerts)
    ]


def triage_together(
    session: Session, ids: list[int], state: str, actor: str, note: str
) -> list[Alert]:
    """Move every alert of `ids` to `state`, or, where one is missing or may not move, none:
    the error names each such alert and why. The caller commits."""
    alerts = alerts_to_triage(session, ids)
    missing = sorted(set(ids) - {a.id for a in alerts})
    if missing:
        raise NotFound(
            f"no alert {', '.join(map(str, missing))}: none of the group was triaged",
            missing=missing,
        )
    refused = [(a, why) for a in alerts if (why := refusal(a, state)) is not None]
    if refused:
        raise Conflict(
            f"{len(refused)} of the {len(alerts)} alerts cannot become {state}, so none was "
            "triaged: " + "; ".join(why for _, why in refused),
            refused=[{"id": a.id, "state": a.state, "why": why} for a, why in refused],
        )
    for alert in alerts:
        triage(session, alert, state, actor, note)
    return alerts
