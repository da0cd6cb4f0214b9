"""Where an alert shows on the pages: at the commit whose run opened it, or, once a bisection
of a multi-commit push named its first bad commit, at that commit, with the measured head
inheriting it ("regressed since 73d54b3, bisected")."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session, aliased

from service.models import Alert, Commit


def alerts_at_commit(session: Session, commit_id: int) -> list[tuple[Alert, str]]:
    """The alerts a commit opened, was found to start (bisection) or fixed, with which."""
    found = session.scalars(
        select(Alert)
        .where(
            (Alert.commit_id == commit_id)
            | (Alert.first_bad_commit_id == commit_id)
            | (Alert.fixed_by_commit_id == commit_id)
        )
        .order_by(Alert.id)
    ).all()
    out = []
    for a in found:
        if a.fixed_by_commit_id == commit_id:
            out.append((a, "fixed here"))
        elif a.first_bad_commit_id == commit_id and a.commit_id != commit_id:
            out.append((a, "started here (bisection)"))
        elif a.first_bad_commit_id not in (None, commit_id):
            out.append((a, "opened here, bisected to an earlier commit"))
        else:
            out.append((a, "opened here"))
    return out


def inherited(
    session: Session, commit_ids: list[int]
) -> dict[tuple[int, str], dict[str, list[int]]]:
    """(commit id, branch) -> {first bad sha: series ids} of the alerts opened at those commits
    whose bisection named an earlier first bad commit."""
    first_bad = aliased(Commit)
    rows = session.execute(
        select(Alert.commit_id, Alert.branch, first_bad.sha, Alert.series_id)
        .join(first_bad, first_bad.id == Alert.first_bad_commit_id)
        .where(Alert.commit_id.in_(commit_ids), Alert.first_bad_commit_id != Alert.commit_id)
        .order_by(Alert.id)
        .limit(5000)
    )
    out: dict[tuple[int, str], dict[str, list[int]]] = {}
    for commit_id, branch, sha, series_id in rows:
        out.setdefault((commit_id, branch), {}).setdefault(sha, []).append(series_id)
    return out


def without_bisected(counts: dict[str, int], moved: int) -> dict[str, int]:
    """A run's verdict counts without the `moved` regressions its alerts' bisections placed at
    earlier commits (they are counted there); the kinds left at zero dropped."""
    out = dict(counts)
    if moved and out.get("regressed"):
        out["regressed"] = max(out["regressed"] - moved, 0)
    return {k: v for k, v in out.items() if v}


def alert_markers(
    session: Session, series_ids: list[int], branch: str, since: datetime
) -> list[tuple[int, int, str, datetime, str, str, str | None]]:
    """(alert id, series id, sha, committed_at, state, summary, measured head sha or None) of
    the series' alerts, each at its first bad commit where a bisection named one."""
    head = aliased(Commit)
    at = aliased(Commit)
    rows = session.execute(
        select(
            Alert.id, Alert.series_id, at.sha, at.committed_at, Alert.state, Alert.summary, head.sha
        )
        .join(head, head.id == Alert.commit_id)
        .join(at, at.id == func.coalesce(Alert.first_bad_commit_id, Alert.commit_id))
        .where(Alert.series_id.in_(series_ids), Alert.branch == branch, at.committed_at >= since)
        .order_by(Alert.id)
        .limit(500)
    ).all()
    return [(*row[:6], row[6] if row[6] != row[2] else None) for row in rows]  # type: ignore[misc]
