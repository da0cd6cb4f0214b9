"""The alerts of a commit and what they say of it, read once for the commit's metrics (the REST
API) and its page: each alert it opened, started (a bisection's first bad commit) or fixed, with
that role; at the first bad commit, the regressions the bisection found there (that commit was
measured only by the bisection's paired jobs, so it has no run of its own); at the measured
head, which of its regressions came in earlier, and its verdict counts without them."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from service.models import Commit
from service.schemas.alerts import AlertPublic
from service.store.alerts.places import alerts_at_commit, without_bisected
from service.store.alerts.rows import alerts_public

FOUND_HERE = "started here (bisection)"
MOVED_AWAY = "opened here, bisected to an earlier commit"


def found_here(alerts: list[AlertPublic], roles: list[str], sha: str) -> list[dict[str, Any]]:
    """The regressions a bisection found at `sha`: each with the change it measured there
    against the last good commit it tested, and the push's measured ends to compare."""
    found = []
    for a, role in zip(alerts, roles, strict=True):
        if role != FOUND_HERE:
            continue
        tested = (a.bisect.get("tested") or {}).get(sha) or {}
        s = a.series
        found.append({
            "alert_id": a.id, "state": a.state,
            "workload": s.workload, "params": s.params, "kernel": s.kernel, "series_id": s.id,
            "change": tested.get("change", a.confirmed_change or a.change),
            "p_value": tested.get("p_value"), "good": a.bisect.get("good"),
            "head": a.commit, "base": a.base_commit,
        })  # fmt: skip
    return found


def moved_away(alerts: list[AlertPublic], roles: list[str]) -> dict[int, str]:
    """series id -> the first bad commit, for the regressions measured here that came in at an
    earlier commit of the push."""
    return {
        a.series.id: a.first_bad_commit
        for a, role in zip(alerts, roles, strict=True)
        if role == MOVED_AWAY and a.first_bad_commit
    }


def by_first_bad(moved: dict[int, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for sha in moved.values():
        out[sha] = out.get(sha, 0) + 1
    return out


ALERT_FIELDS = {"id", "state", "change", "summary", "series", "commit", "branch",
                "first_bad_commit", "fixed_by_commit"}  # fmt: skip


def commit_alerts(
    session: Session, commit: Commit, verdict_counts: dict[str, int]
) -> dict[str, Any]:
    """The commit metrics' part that its alerts tell: `alerts` (each with its role and
    series), `moved` (series id -> the first bad commit its regression was bisected to),
    `bisected` (first bad commit -> how many), `found_here`, and `verdict_counts` with the
    regressions counted where a bisection found they came in, not at the measured head."""
    found = alerts_at_commit(session, commit.id)
    alerts = alerts_public(session, [a for a, _ in found]) if found else []
    roles = [role for _, role in found]
    moved = moved_away(alerts, roles)
    return {
        "alerts": [
            {"role": role, **a.model_dump(mode="json", include=ALERT_FIELDS)}
            for a, role in zip(alerts, roles, strict=True)
        ],
        "moved": moved,
        "bisected": by_first_bad(moved),
        "found_here": found_here(alerts, roles, commit.sha),
        "verdict_counts": without_bisected(verdict_counts, len(moved)),
    }
