"""What the database holds, as Prometheus gauges read at scrape time (service.core.telemetry).

Read from the shared database, these say the same whichever process or replica is scraped:
the queue's waiting and running jobs by label set, the runs waiting for analysis and the age of
the oldest, alerts by state, and each runner's last contact.
"""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from service.models import Alert, Job, Run, Runner
from service.models.alert import ALERT_STATES

QUEUE_STATES = ("queued", "running")  # the others only grow: counts of those are history


def gauges(session: Session, now: datetime | None = None) -> CollectorRegistry:
    """A registry of the database gauges, read now (one short read per family)."""
    now = now or datetime.now(UTC)
    families: list[GaugeMetricFamily] = []

    queue = GaugeMetricFamily(
        "kernelwatch_queue_jobs",
        "Jobs waiting or running, by state and the label set they require ('' for none)",
        labels=["state", "labels"],
    )
    depth = {(state, ""): 0 for state in QUEUE_STATES}
    for state, label_key, count in session.execute(
        select(Job.state, Job.label_key, func.count())
        .where(Job.state.in_(QUEUE_STATES))
        .group_by(Job.state, Job.label_key)
    ):
        depth[(state, label_key)] = count
    for (state, label_key), count in sorted(depth.items()):
        queue.add_metric([state, label_key], count)
    families.append(queue)

    waiting = or_(Run.analysed_at.is_(None), Run.change_points_at.is_(None))
    count, oldest = session.execute(
        select(func.count(), func.min(Run.received_at)).where(waiting)
    ).one()
    families.append(
        GaugeMetricFamily(
            "kernelwatch_analysis_backlog_runs",
            "Stored runs whose verdicts or change points are still to be worked out",
            value=count,
        )
    )
    families.append(
        GaugeMetricFamily(
            "kernelwatch_analysis_backlog_oldest_seconds",
            "Seconds since the oldest run of the analysis backlog was stored (0 when none waits)",
            value=_age(now, oldest),
        )
    )

    alerts = GaugeMetricFamily("kernelwatch_alerts", "Alerts by state", labels=["state"])
    by_state = dict.fromkeys(ALERT_STATES, 0)
    by_state.update(
        {
            state: n
            for state, n in session.execute(select(Alert.state, func.count()).group_by(Alert.state))
        }
    )
    for state, n in by_state.items():
        alerts.add_metric([state], n)
    families.append(alerts)

    seen = GaugeMetricFamily(
        "kernelwatch_runner_last_seen_seconds",
        "Seconds since each registered runner last reached the service (register, claim, "
        "lease or heartbeat); runners never seen are left out",
        labels=["runner"],
    )
    # Agents: runners with a token that is not revoked (a document's runner section alone
    # names a runner without one).
    runners = session.execute(
        select(Runner.name, Runner.last_seen_at).where(
            Runner.token_hash.is_not(None), Runner.revoked_at.is_(None)
        )
    ).all()
    for name, last_seen in runners:
        if last_seen is not None:
            seen.add_metric([name], _age(now, last_seen))
    families.append(seen)
    families.append(
        GaugeMetricFamily(
            "kernelwatch_runners", "Runner agents with a token that is not revoked", len(runners)
        )
    )
    return _registry(families)


def _age(now: datetime, then: datetime | None) -> float:
    if then is None:
        return 0.0
    if then.tzinfo is None:  # SQLite hands back naive UTC
        then = then.replace(tzinfo=UTC)
    return max(0.0, (now - then).total_seconds())


class _Fixed(Collector):
    def __init__(self, families: list[GaugeMetricFamily]) -> None:
        self.families = families

    def collect(self) -> list[GaugeMetricFamily]:
        return self.families


def _registry(families: list[GaugeMetricFamily]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(families))
    return registry
