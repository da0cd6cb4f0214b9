"""Two commits side by side: every series measured at both, with change and significance.

Significant means what a verdict means (service.analysis.verdicts): beyond chance (BH q at most
Q over the rows) and beyond the floor of the kernel's duration class, under which no change is
ever called a regression; a row whose series has an alert at the head (opened there, or started
there by a bisection) names it, its cause in its summary."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis.verdicts import Q, class_floor, rank_test_p_values
from service.core.errors import InvalidReference, NotFound
from service.evaluation.reads.commit_metrics import latest_runs
from service.models import Alert, Commit, Result, Series
from service.schemas.alerts import CompareAlert, CompareRow, ComparisonPublic
from service.store.history.commits import resolve_commit
from service.store.history.samples import unpack_samples
from service.store.history.series import series_public


def _results(session: Session, commit: Commit) -> dict[int, tuple[Result, Series]]:
    runs = latest_runs(session, commit, None)
    rows = session.execute(
        select(Result, Series)
        .join(Series, Series.id == Result.series_id)
        .where(Result.run_id.in_([r.id for r in runs]))
    ).all()
    return {series.id: (result, series) for result, series in rows}


def compare_commits(
    session: Session, base: str, head: str, repository: str | None
) -> ComparisonPublic:
    from scipy.stats import false_discovery_control

    base_commit, repo = resolve_commit(session, base, repository)
    try:
        head_commit, _ = resolve_commit(session, head, repository or repo)
    except NotFound as missing:
        if repository is not None:
            raise
        # Said as what it is, where the head is a commit of another repository.
        try:
            _, elsewhere = resolve_commit(session, head, None)
        except NotFound:
            raise missing from None
        raise InvalidReference(f"{base} is in {repo} but {head} is in {elsewhere}") from None
    before, after = _results(session, base_commit), _results(session, head_commit)
    common = sorted(set(before) & set(after))
    p_values = rank_test_p_values(
        [
            (unpack_samples(after[sid][0].samples), unpack_samples(before[sid][0].samples))
            for sid in common
        ]
    )
    q_values = list(false_discovery_control(p_values, method="bh")) if p_values else []
    alerts = _alerts_at_head(session, head_commit, common)
    rows = []
    for sid, p, q in zip(common, p_values, q_values, strict=True):
        (old, series), (new, _) = before[sid], after[sid]
        change = (new.median - old.median) / old.median
        floor = class_floor(old.median) if series.unit == "us" else 0.0
        rows.append(
            CompareRow(
                series=series_public(series, repo),
                base_median=old.median,
                head_median=new.median,
                change=change,
                p_value=p,
                q_value=float(q),
                floor=floor,
                significant=bool(q <= Q) and abs(change) >= floor,
                alert=alerts.get(sid),
            )
        )
    rows.sort(key=lambda r: (not r.significant, -abs(r.change)))
    return ComparisonPublic(
        base=base_commit.sha,
        head=head_commit.sha,
        repository=repo,
        rows=rows,
        only_in_base=[series_public(before[s][1], repo) for s in sorted(set(before) - set(after))],
        only_in_head=[series_public(after[s][1], repo) for s in sorted(set(after) - set(before))],
    )


def _alerts_at_head(
    session: Session, head: Commit, series_ids: list[int]
) -> dict[int, CompareAlert]:
    """series id -> its newest alert found at the head or bisected to it."""
    found = session.scalars(
        select(Alert)
        .where(
            Alert.series_id.in_(series_ids),
            (Alert.commit_id == head.id) | (Alert.first_bad_commit_id == head.id),
        )
        .order_by(Alert.id)
    )
    return {a.series_id: CompareAlert(id=a.id, state=a.state, summary=a.summary) for a in found}
