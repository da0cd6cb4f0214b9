"""The analysis backlog as the store reads it (service.store.verdicts.waiting): the runs whose
step is still to do, oldest first and at most a batch; analysed runs put back on it; and whether
a series' repository (on a branch) still has a run waiting for change points, counting runs that
did not measure the series."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.backlog import segment_pending
from service.models import Run, Series
from service.store.verdicts import waiting
from tests.documents import document
from tests.service.store.conftest import Store, StoreLine


def test_waiting_runs_are_those_without_the_step_oldest_first_and_at_most_a_batch(
    factory: sessionmaker[Session], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = store(document(commit="a"), analyse=True)
    later = [store(document(commit=c)) for c in ("b", "c", "d")]
    with factory() as session:
        assert waiting.waiting_runs(session, Run.analysed_at) == later
        assert waiting.waiting_runs(session, Run.change_points_at) == [first, *later]
        monkeypatch.setattr(waiting, "BATCH", 2)
        assert waiting.waiting_runs(session, Run.analysed_at) == later[:2]


def test_reopened_runs_wait_for_their_verdicts_again(
    factory: sessionmaker[Session], store_line: StoreLine
) -> None:
    runs = store_line([{"k": 100.0}] * 3, analyse=True)
    with factory() as session, session.begin():
        assert waiting.waiting_runs(session, Run.analysed_at) == []
        waiting.reopen(session, set(runs[1:]))
        waiting.reopen(session, [])  # nothing to put back: no statement, no error
    with factory() as session:
        assert waiting.waiting_runs(session, Run.analysed_at) == runs[1:]
        # Only the verdicts' step: the change points' backlog is another column.
        assert session.get(Run, runs[0]).analysed_at is not None


def test_a_series_waits_while_any_run_of_its_repository_on_the_branch_waits(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="a", medians={"k": 100.0}))
    segment_pending(factory)
    with factory() as session:
        series_id = session.scalar(select(Series.id))
        assert not waiting.series_pending(session, series_id, "main")
    # A run that measured another kernel only counts too: the backlog is read per repository
    # (and branch), never per series, so that the check stays cheap.
    store(document(commit="b", minutes=1, medians={"other": 50.0}))
    with factory() as session:
        assert waiting.series_pending(session, series_id, "main")
        assert waiting.series_pending(session, series_id)
        assert not waiting.series_pending(session, series_id, "release")


def test_a_run_of_another_repository_leaves_the_series_settled(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="a", medians={"k": 100.0}))
    segment_pending(factory)
    store(document(commit="b", repository="acme/elsewhere", medians={"k": 100.0}))
    with factory() as session:
        ours = session.scalar(select(Series.id).order_by(Series.id))
        assert not waiting.series_pending(session, ours, "main")
