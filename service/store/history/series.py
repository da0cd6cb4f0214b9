"""Finding a series and reading its history along a branch."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, aliased

from service.core.errors import InvalidReference, NotFound
from service.core.sql import among, dialect_insert
from service.models import Alert, ChangePoint, Commit, Repository, Result, Run, Series, Verdict
from service.models.base import utcnow
from service.models.series import MEASURE_METHOD
from service.schemas import metrics as m
from service.schemas.document import params_key
from service.store.history.commits import statistics_data
from service.store.history.samples import unpack_samples
from service.store.verdicts.waiting import series_pending


def measure_identity(run: Run, workload: str, key: str, measure: str) -> str:
    """The identity of a workload's measure's series (as workload_rows.series_identity orders a
    timing's fields: its kernel none, its metric the measure, its method MEASURE_METHOD)."""
    parts = [str(run.repository_id), run.suite, workload, key, "", measure, run.fingerprint,
             MEASURE_METHOD]  # fmt: skip
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def measure_series(session: Session, identities: list[str]) -> dict[str, Series]:
    """The measure series that exist among these identities, by identity."""
    if not identities:
        return {}
    found = session.scalars(select(Series).where(among(session, Series.identity, identities)))
    return {s.identity: s for s in found}


def new_measure_series(
    session: Session, run: Run, workload: str, params: dict[str, Any], measure: str, unit: str
) -> Series:
    """The series of a workload's measure beside its duration (its prepare time, peak memory
    or numeric error), made where it is new: the anchor of its alert. It holds no results: a
    measure's values are its workload's (run_workloads.measures), judged by their own rule."""
    key = params_key(params)
    identity = measure_identity(run, workload, key, measure)
    session.execute(
        dialect_insert(session)(Series)
        .values(identity=identity, repository_id=run.repository_id, suite=run.suite,
                workload=workload, params=params, params_key=key, kernel="", metric=measure,
                unit=unit, method=MEASURE_METHOD, fingerprint=run.fingerprint,
                created_at=utcnow())
        .on_conflict_do_nothing()
    )  # fmt: skip
    made = session.scalar(select(Series).where(Series.identity == identity))
    assert made is not None
    return made


def series_public(series: Series, repository: str) -> m.SeriesPublic:
    return m.SeriesPublic(
        id=series.id,
        repository=repository,
        suite=series.suite,
        workload=series.workload,
        params=series.params,
        kernel=series.kernel,
        metric=series.metric,
        unit=series.unit,
        method=series.method,
        fingerprint=series.fingerprint,
    )


def find_series(
    session: Session,
    *,
    series_id: int | None,
    filters: dict[str, Any],
    params: dict[str, Any] | None,
) -> tuple[Series, str]:
    """The one series the query names; several matches → 400 listing them."""
    query = select(Series, Repository.name).join(Repository, Repository.id == Series.repository_id)
    if series_id is not None:
        query = query.where(Series.id == series_id)
    for column, value in filters.items():
        if value is None:
            continue
        attr = Repository.name if column == "repository" else getattr(Series, column)
        query = query.where(attr == value)
    if params is not None:
        query = query.where(Series.params_key == params_key(params))
    rows = session.execute(query.order_by(Series.id).limit(51)).all()
    if not rows:
        raise NotFound("no series matches that query")
    if len(rows) > 1:
        candidates = [series_public(s, name).model_dump() for s, name in rows[:50]]
        raise InvalidReference(
            f"{'over 50' if len(rows) > 50 else len(rows)} series match; narrow the query "
            "(params=, fingerprint=, suite=, method=) or give id=",
            candidates=candidates,
        )
    return rows[0][0], rows[0][1]


def default_branch(session: Session, series: Series) -> str:
    branch = session.scalars(
        select(Result.branch)
        .where(Result.series_id == series.id)
        .order_by(Result.committed_at.desc())
        .limit(1)
    ).first()
    if branch is None:
        raise NotFound(f"series {series.id} has no results yet")
    return branch


def history(
    session: Session, series: Series, repository: str, branch: str, limit: int, with_samples: bool
) -> m.SeriesHistory:
    """The last `limit` results of the series on the branch, oldest first."""
    return histories(session, [series], repository, branch, limit, with_samples)[0]


def histories(
    session: Session,
    chosen: list[Series],
    repository: str,
    branch: str,
    limit: int,
    with_samples: bool = False,
) -> list[m.SeriesHistory]:
    """`history` of several series of one repository, each validated in one piece."""
    return [
        m.SeriesHistory.model_validate(h)
        for h in histories_data(session, chosen, repository, branch, limit, with_samples)
    ]


def histories_data(
    session: Session,
    chosen: list[Series],
    repository: str,
    branch: str,
    limit: int,
    with_samples: bool = False,
) -> list[dict[str, Any]]:
    """The histories as plain data in m.SeriesHistory's shape (datetimes as such): what the
    series share is read once (whether the branch waits for change points, the change
    points), and a page that only draws them builds no models."""
    if not chosen:
        return []
    # Read before the change points: "not pending" then holds for those read after it.
    pending = series_pending(session, chosen[0].id, branch)
    points = {s.id: _points(session, s.id, branch, limit, with_samples) for s in chosen}
    _add_verdicts(session, points)
    since = {sid: p[0]["committed_at"] for sid, p in points.items() if p}
    shifts = _change_points(session, since, branch)
    return [
        {
            "series": series_public(s, repository).model_dump(),
            "branch": branch,
            "points": points[s.id],
            "change_points": shifts.get(s.id, []),
            "change_points_pending": pending,
        }
        for s in chosen
    ]


def newest_results(series_id: int, branch: str, limit: int) -> Any:
    """The ids of the series' last `limit` results on the branch, as a subquery to join."""
    return (
        select(Result.id)
        .where(Result.series_id == series_id, Result.branch == branch)
        .order_by(Result.committed_at.desc(), Result.id.desc())
        .limit(limit)
        .subquery()
    )


def _points(
    session: Session, series_id: int, branch: str, limit: int, with_samples: bool
) -> list[dict[str, Any]]:
    newest = newest_results(series_id, branch, limit)
    # Plain columns, and the samples blob only when asked for: a 1,000-point history is read
    # often, and ORM rows with their blobs cost more than the query itself.
    stats = (
        Result.n,
        Result.median,
        Result.q1,
        Result.q3,
        Result.min,
        Result.max,
        Result.mean,
        Result.stdev,
    )
    columns = [
        Result.id,
        Result.committed_at,
        *stats,
        Commit.sha,
        Commit.author_name,
        func.substr(Commit.message, 1, 200).label("subject"),
        Run.run_uuid,
    ]
    if with_samples:
        columns.append(Result.samples)
    rows = session.execute(
        select(*columns)
        .join(newest, newest.c.id == Result.id)
        .join(Commit, Commit.id == Result.commit_id)
        .join(Run, Run.id == Result.run_id)
        .order_by(Result.committed_at, Result.id)
    ).all()
    return [
        {
            "result_id": row.id,  # for _add_verdicts, which takes it out
            "commit": row.sha,
            "committed_at": row.committed_at,
            "author_name": row.author_name,
            "subject": row.subject.split("\n", 1)[0],
            "run_id": row.run_uuid,
            "statistics": statistics_data(row),
            "samples": unpack_samples(row.samples).tolist() if with_samples else None,
        }
        for row in rows
    ]


def _add_verdicts(session: Session, points: dict[int, list[dict[str, Any]]]) -> None:
    """Each point's verdict (that of its result, as the commit's metrics give it; None until
    the analysis decided one), in one query for every series' points."""
    wanted = {p.pop("result_id"): p for series in points.values() for p in series}
    for p in wanted.values():
        p["verdict"] = None
    if not wanted:
        return
    # Along the series index, bounded below by the oldest result's id: a list of up to
    # thousands of result ids would be thousands of parameters on SQLite, and verdicts have
    # no index of their results to look them up by.
    rows = session.execute(
        select(Verdict.result_id, Verdict.verdict).where(
            among(session, Verdict.series_id, list(points)),
            Verdict.result_id >= min(wanted),
        )
    )
    for result_id, verdict in rows:
        if result_id in wanted:
            wanted[result_id]["verdict"] = verdict


def _change_points(
    session: Session, since: dict[int, datetime], branch: str
) -> dict[int, list[dict[str, Any]]]:
    """Per series, its stored change points on the branch from `since[series]` on, oldest
    first: one query for all of them."""
    if not since:
        return {}
    rows = session.execute(
        select(
            ChangePoint.series_id,
            ChangePoint.before_median,
            ChangePoint.after_median,
            ChangePoint.change,
            Commit.sha,
            Commit.committed_at,
        )
        .join(Commit, Commit.id == ChangePoint.commit_id)
        .where(
            among(session, ChangePoint.series_id, list(since)),
            ChangePoint.branch == branch,
            Commit.committed_at >= min(since.values()),
        )
        .order_by(Commit.committed_at, ChangePoint.id)
    ).all()
    moved = bisected_heads(session, list(since), branch)
    out: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        if r.committed_at >= since[r.series_id]:
            out.setdefault(r.series_id, []).append(
                {
                    "commit": r.sha,
                    "committed_at": r.committed_at,
                    "before_median": r.before_median,
                    "after_median": r.after_median,
                    "change": r.change,
                    "bisected_to": moved.get((r.series_id, r.sha)),
                }
            )
    return out


def bisected_heads(
    session: Session, series_ids: list[int], branch: str
) -> dict[tuple[int, str], str]:
    """(series id, measured head) -> the first bad commit a bisection of the push found, for
    the series' alerts on the branch that one moved to an earlier commit."""
    head, first_bad = aliased(Commit), aliased(Commit)
    rows = session.execute(
        select(Alert.series_id, head.sha, first_bad.sha)
        .join(head, head.id == Alert.commit_id)
        .join(first_bad, first_bad.id == Alert.first_bad_commit_id)
        .where(
            among(session, Alert.series_id, series_ids),
            Alert.branch == branch,
            Alert.first_bad_commit_id != Alert.commit_id,
        )
        .order_by(Alert.id)
    ).all()
    return {(sid, at): bad for sid, at, bad in rows}
