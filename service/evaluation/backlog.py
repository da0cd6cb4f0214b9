"""The analysis backlog: runs stored but not yet analysed, worked off after the ingest.

POST /api/v1/runs stores a document and answers; deciding its verdicts and alerts (rank tests
against baselines read from the history) and re-segmenting its series for change points cost
more than storing it, so a stored run waits here (runs.analysed_at and runs.change_points_at
are NULL) and the app works it off a moment later (service.runs.worker), or, with
`analyse_in_request`, before the POST answers.

Verdicts and alerts are decided run by run, ancestors first (a burst posted out of order is
decided as if it had come in order); a run whose commit is an ancestor of runs analysed before
it (it arrived late) puts those back on the backlog, so that every verdict is the same whatever
the order the runs arrived in. A run also puts back the runs before it on its line that left a
verdict pending for one of its series (a level too young to know its wander): it may be the
next run that settles them (service.analysis.verdicts). Change points
are coalesced: the newest run's window on a branch covers the older runs' commits, so a run that
is covered (its commit in a window just re-segmented, its series among those re-segmented) is
marked done without work of its own, and a burst of runs costs one re-segmentation.

Several service processes may work the backlog at once: each step claims its run with a
conditional UPDATE in the transaction that writes the step's rows, so each is done exactly once.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import one_writer
from service.evaluation.alerts.lifecycle import confirm_measured, notify_broken, update_alerts
from service.evaluation.alerts.measure_alerts import update_measure_alerts
from service.evaluation.verdicts import confirmations
from service.evaluation.verdicts.changepoints import Segmented, update_change_points
from service.evaluation.verdicts.evaluate import evaluate_run
from service.models import Commit, Result, Run, Verdict
from service.models.base import utcnow
from service.store.verdicts.waiting import BATCH, reopen, waiting_runs

log = logging.getLogger(__name__)
CONFIRM_ATTEMPTS = 3
# Verdicts decided in one go (late arrivals put runs back; the rest waits for the next turn).
MAX_ANALYSES = 4 * BATCH
# Runs a judged run puts back that are decided with it before its caller reads (a pending
# verdict it settles, the run after that one): more, from a burst, wait for the worker.
FOLLOW_UP = 8


@dataclass(frozen=True)
class Worked:
    analysed: list[str]  # run ids (the documents' own) whose verdicts were decided
    segmented: int  # runs taken off the change-point backlog


def backlog_ages(factory: sessionmaker[Session]) -> tuple[datetime | None, datetime | None]:
    """When the newest and the oldest run still waiting for any analysis were stored."""
    waiting = or_(Run.analysed_at.is_(None), Run.change_points_at.is_(None))
    with factory() as session:
        newest, oldest = session.execute(
            select(func.max(Run.received_at), func.min(Run.received_at)).where(waiting)
        ).one()
    return newest, oldest


def analyse_run(factory: sessionmaker[Session], run_id: int) -> list[str]:
    """Decide one run's verdicts and alerts, and those of the runs it puts back on the backlog
    (the descendants it arrived after, the earlier runs whose pending verdicts it settles), so
    that what the caller reads next is decided; the run ids decided, its own first (none when
    another process took it)."""
    outcome = _analyse(factory, run_id)
    if outcome is None:
        _drain(factory)
        return []
    decided, reopened = [outcome[0]], list(outcome[1])
    elsewhere = False
    while reopened and len(decided) <= FOLLOW_UP:
        with factory() as session:
            reopened = in_ancestry_order(session, reopened)
        again = _analyse(factory, reopened.pop(0))
        if again is None:
            elsewhere = True
        else:
            decided.append(again[0])
            reopened = sorted({*reopened, *again[1]})
    if elsewhere:
        _drain(factory)
    return decided


def _drain(factory: sessionmaker[Session]) -> None:
    """Another process (the background worker) took part of the chain, and may put more back
    on the backlog when it is done: work off the verdict backlog here too until it is empty,
    so that the caller's next read is decided. A claim the other process holds waits for its
    commit (one writer on SQLite, the row's lock on PostgreSQL), and then it is decided."""
    for _ in range(MAX_ANALYSES):
        todo = _ordered_waiting(factory)
        if not todo:
            return
        try:
            _analyse(factory, todo[0])
        except Exception:  # another run's trouble is the worker's to retry, not this request's
            log.exception("analysing run %d on behalf of a request failed", todo[0])
            return


def _analyse(factory: sessionmaker[Session], run_id: int) -> tuple[str, list[int]] | None:
    """(run id, runs put back on the backlog) or None when another process took the run."""
    with one_writer(factory), factory() as session, session.begin():
        if not _claim(session, run_id, Run.analysed_at):
            return None
        run = session.get(Run, run_id)
        assert run is not None
        verdicts = evaluate_run(session, run)
        suspected = update_alerts(session, run, verdicts)
        update_measure_alerts(session, run)
        # Those the run measured against their base itself are settled now; the rest wait.
        waiting = confirm_measured(session, run, suspected, CONFIRM_ATTEMPTS)
        confirmations.queue(session, run, verdicts, waiting, max_attempts=CONFIRM_ATTEMPTS)
        notify_broken(session, run)
        return run.run_uuid, _reopen_descendants(session, run) + _reopen_pending(session, run)


def _reopen_descendants(session: Session, run: Run) -> list[int]:
    """Put back on the backlog the analysed runs of the run's series whose commits descend from
    its commit: it arrived after them, so their baselines lacked it. Found among the results
    dated at or after the commit (the (series, branch, time) index: nothing, usually), then by
    their commits' ancestry."""
    head, series = _commit_and_series(session, run)
    later = session.execute(
        select(Run.id, Commit.ancestors, Commit.committed_at)
        .join(Commit, Commit.id == Run.commit_id)
        .where(
            Run.id.in_(
                select(Result.run_id).where(
                    Result.series_id.in_(series),
                    Result.branch == run.branch,
                    Result.committed_at >= head.committed_at,
                    Result.run_id != run.id,
                )
            ),
            Run.analysed_at.is_not(None),
        )
    ).all()
    descendants = [
        rid
        for rid, ancestors, committed_at in later
        if (head.sha in ancestors if ancestors else committed_at > head.committed_at)
    ]
    # Pull requests whose merge base this is: their verdicts waited for it.
    descendants += session.scalars(
        select(Run.id).where(
            Run.repository_id == run.repository_id,
            Run.merge_base_sha == head.sha,
            Run.base_ref == run.branch,
            Run.analysed_at.is_not(None),
        )
    ).all()
    reopen(session, descendants)
    return descendants


def _reopen_pending(session: Session, run: Run) -> list[int]:
    """Put back on the backlog the analysed runs of the run's line (its first-parent ancestors
    on its branch, no later than it: the runs whose next run it can be,
    store.ancestry.next_results) with a pending verdict on one of the run's series."""
    if run.pull_request is not None:
        return []
    head, series = _commit_and_series(session, run)
    waiting = session.execute(
        select(Run.id, Commit.sha, Commit.committed_at)
        .join(Verdict, Verdict.run_id == Run.id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(
            Verdict.verdict == "pending",
            Verdict.series_id.in_(series),
            Run.branch == run.branch,
            Run.pull_request.is_(None),
            Run.analysed_at.is_not(None),
            Run.id != run.id,
            Commit.id != head.id,
            Commit.committed_at <= head.committed_at,
        )
    ).all()
    line = set(head.ancestors or ())
    ids = sorted(
        {
            rid
            for rid, sha, committed_at in waiting
            if (sha in line if head.ancestors else committed_at < head.committed_at)
        }
    )
    reopen(session, ids)
    return ids


def _commit_and_series(session: Session, run: Run) -> tuple[Commit, Any]:
    """The run's commit, and a sub-select of the series it measured."""
    head = session.get(Commit, run.commit_id)
    assert head is not None
    return head, select(Result.series_id).where(Result.run_id == run.id)


def in_ancestry_order(session: Session, run_ids: list[int]) -> list[int]:
    """The runs with every commit's ancestors first: a burst posted out of order is decided as
    if it had come in order (a first-parent line's commits list ever more ancestors; the
    runner caps the list, so ties go by commit time, then by store order)."""
    if len(run_ids) < 2:
        return run_ids
    rows = session.execute(
        select(Run.id, Commit.ancestors, Commit.committed_at)
        .join(Commit, Commit.id == Run.commit_id)
        .where(Run.id.in_(run_ids))
    ).all()
    order = sorted(rows, key=lambda r: (len(r.ancestors or ()), r.committed_at, r.id))
    return [r.id for r in order]


def process_pending(
    factory: sessionmaker[Session], on_analysed: Callable[[str], None] | None = None
) -> Worked:
    """Work off what the backlog holds: verdicts first, ancestors before descendants (a late
    ancestor puts its descendants back, and they are decided after it, once), then change
    points."""
    analysed: list[str] = []
    todo = _ordered_waiting(factory)
    while todo and len(analysed) < MAX_ANALYSES:
        outcome = _analyse(factory, todo.pop(0))
        if outcome is None:
            continue
        analysed.append(outcome[0])
        if on_analysed is not None:
            on_analysed(outcome[0])
        if outcome[1]:  # descendants back on the backlog: they take their place in the order
            todo = _ordered_waiting(factory)
    return Worked(analysed, segment_pending(factory))


def _ordered_waiting(factory: sessionmaker[Session]) -> list[int]:
    with factory() as session:
        return in_ancestry_order(session, waiting_runs(session, Run.analysed_at))


def segment_pending(factory: sessionmaker[Session]) -> int:
    """Re-segment the change-point backlog; the number of runs taken off it."""
    with factory() as session:
        ids = waiting_runs(session, Run.change_points_at)
        if not ids:
            return 0
        runs = session.execute(
            select(Run.id, Run.repository_id, Run.branch, Run.commit_id).where(Run.id.in_(ids))
        ).all()
        measured: dict[int, set[int]] = defaultdict(set)
        for run_id, series_id in session.execute(
            select(Result.run_id, Result.series_id).where(Result.run_id.in_(ids))
        ):
            measured[run_id].add(series_id)
    groups: dict[tuple[int, str], list] = defaultdict(list)
    for row in runs:
        groups[row.repository_id, row.branch].append(row)
    done = 0
    for members in groups.values():
        covered: list[Segmented] = []
        reach = frozenset(row.commit_id for row in members)
        # Newest stored first: its window reaches back over the others' commits (`reach`).
        for row in sorted(members, key=lambda r: -r.id):
            series = measured.get(row.id, set())
            skip = any(row.commit_id in c.window and series <= c.series for c in covered)
            segmented = _segment(factory, row.id, skip, reach)
            if segmented is not None:
                done += 1
                covered.append(segmented)
    return done


def _segment(
    factory: sessionmaker[Session], run_id: int, skip: bool, reach: frozenset[int] = frozenset()
) -> Segmented | None:
    """None when another process took the run first."""
    with one_writer(factory), factory() as session, session.begin():
        if not _claim(session, run_id, Run.change_points_at):
            return None
        if skip:
            return Segmented(0, frozenset(), frozenset())
        run = session.get(Run, run_id)
        assert run is not None
        return update_change_points(session, run, reach)


def _claim(session: Session, run_id: int, column: ColumnElement) -> bool:
    claimed = session.execute(
        update(Run)
        .where(Run.id == run_id, column.is_(None))
        .values({column.key: utcnow()})
        .execution_options(synchronize_session=False)
    )
    return bool(claimed.rowcount)
