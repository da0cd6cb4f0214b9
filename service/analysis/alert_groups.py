"""One cause, one headline: the alerts of one change, grouped by the kernel and cause they share.

As Perfherder's alert summaries: alerts whose regression starts at the same commit (the first
bad commit a bisection named, else the commit the alert was found at) and whose attributions
rank the same kernel and the same kind of cause first are one change, triaged together under
one line: "gemm_splitk_epilogue: uncoalesced global access — slowed gemm_fwd +14.5%, train_step
+1.8%". An alert whose attribution ranks no cause stays a group of its own: nothing says its
slowdown is another's. Plain data in and out; service.evaluation.alerts.groups reads the alerts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# The kinds service.analysis.causes ranks, as a headline names them (its labels carry the
# numbers of one alert, which differ between the workloads of one change).
CAUSE_NAMES = {
    "dram": "more DRAM traffic",
    "access_pattern": "uncoalesced global access",
    "spills": "register spills",
    "bank_conflicts": "shared-memory bank conflicts",
    "shared_memory": "more shared-memory traffic",
    "atomics": "more global atomics",
    "instructions": "more instructions",
    "occupancy": "lower occupancy",
    "occupancy_registers": "lower occupancy (registers)",
    "occupancy_shared_memory": "lower occupancy (shared memory)",
    "parallelism": "idle SMs",
    "l2": "more L2 traffic",
}


def cause_name(kind: str) -> str:
    return CAUSE_NAMES.get(kind, kind.replace("_", " "))


@dataclass(frozen=True)
class AlertFacts:
    """What grouping reads of one alert."""

    id: int
    repository: str
    branch: str
    commit: str  # where the alert was found
    first_bad_commit: str | None  # where its bisection found it starts
    kernel: str | None  # of the top-ranked cause
    cause: str | None  # that cause's kind
    workload: str  # its name
    change: float
    summary: str = ""
    described: str = ""  # the name with its parameters, where two of a group share the name

    @property
    def culprit(self) -> str:
        return self.first_bad_commit or self.commit


@dataclass(frozen=True)
class GroupKey:
    repository: str
    # A branch's alerts open, close and are fixed on their own
    # (service.evaluation.alerts.lifecycle): the same commit regressing two branches is two groups.
    branch: str
    commit: str
    kernel: str | None
    cause: str | None


@dataclass(frozen=True)
class AlertGroup:
    key: GroupKey
    headline: str
    alerts: tuple[AlertFacts, ...]  # the largest change first


def top_cause(attribution: Mapping[str, Any]) -> tuple[str, str] | None:
    """The kernel and kind of the attribution's first cause (service.evaluation.alerts.attribution
    ranks them by their share of the workload's slowdown, largest first); None without one."""
    causes = attribution.get("causes") or []
    first = causes[0] if isinstance(causes, list) and causes else None
    if not isinstance(first, Mapping) or not first.get("kernel") or not first.get("kind"):
        return None
    return str(first["kernel"]), str(first["kind"])


def group_alerts(alerts: Iterable[AlertFacts]) -> list[AlertGroup]:
    """The groups, the one with the newest alert first (alert ids grow with time)."""
    buckets: dict[tuple[Any, ...], list[AlertFacts]] = {}
    for a in alerts:
        shared = a.kernel is not None and a.cause is not None
        key = (a.repository, a.branch, a.culprit, a.kernel, a.cause) if shared else (a.id,)
        buckets.setdefault(key, []).append(a)
    groups = [_group(members) for members in buckets.values()]
    return sorted(groups, key=lambda g: -max(a.id for a in g.alerts))


def _group(members: list[AlertFacts]) -> AlertGroup:
    ordered = tuple(sorted(members, key=lambda a: (-a.change, a.id)))
    first = ordered[0]
    key = GroupKey(first.repository, first.branch, first.culprit, first.kernel, first.cause)
    return AlertGroup(key, headline(key, ordered), ordered)


def headline(key: GroupKey, alerts: tuple[AlertFacts, ...]) -> str:
    if key.kernel is None or key.cause is None:
        (alert,) = alerts
        return alert.summary or f"{alert.workload} {alert.change:+.1%}"
    names = [a.workload for a in alerts]
    shared = {n for n in names if names.count(n) > 1}
    slowed = ", ".join(
        f"{(a.described or a.workload) if a.workload in shared else a.workload} {a.change:+.1%}"
        for a in alerts
    )
    return f"{key.kernel}: {cause_name(key.cause)} — slowed {slowed}"
