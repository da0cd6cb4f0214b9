"""What a finished bisection says on a commit's page: at the first bad commit, the regressions
it found there (that commit was measured only by the bisection's paired jobs, so it has no run
of its own); at the measured head, which of its regressions came in earlier."""

from __future__ import annotations

from typing import Any

from dashboards.format import series_label
from service.schemas.alerts import AlertPublic

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
            "series": series_label(s.workload, s.params, s.kernel), "series_id": s.id,
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
