"""service/models/verdict.py: the verdicts, work verdicts and confirmation states; on the
migrated database a verdict row from before outliers and run offsets were recorded reads back
not an outlier with no offset controls (the database's defaults), and a work verdict from before
labels and noise pairs reads back "" and 0; verdicts go with their run, series and result but
outlive the segment's first commit and the series they were redefined from; work and measure
verdicts go with their run's workload and outlive the base run; a series is confirmed at most
once per run, queued first, and a confirmation outlives its base series, base commit and job."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.models import (
    Commit,
    Confirmation,
    Job,
    MeasureVerdict,
    Repository,
    Result,
    Run,
    RunWorkload,
    Series,
    Verdict,
    WorkVerdict,
)
from service.models.verdict import CONFIRMATION_STATES, VERDICTS, WORK_VERDICTS
from tests.service.models.conftest import (
    T0,
    added,
    commit_row,
    count,
    insert_bare,
    run_row,
    series_row,
)


def test_the_verdicts_work_verdicts_and_confirmation_states() -> None:
    assert VERDICTS == ("regressed", "improved", "unchanged", "pending", "new", "missing", "broken")
    assert WORK_VERDICTS == ("changed", "same", "new", "learning")
    assert CONFIRMATION_STATES == ("queued", "confirmed", "faster", "not_reproduced", "unmeasured")


def test_a_verdict_from_before_outliers_and_offsets_reads_back_neither(
    session: Session, run: Run, series: Series
) -> None:
    pk = insert_bare(session, "verdicts", run_id=run.id, series_id=series.id, verdict="unchanged",
                     baseline_results=5, baseline_commits=[], note="", segment_note="",
                     created_at=T0)  # fmt: skip
    read = session.get(Verdict, pk)
    assert read.outlier is False
    assert (read.offset_controls, read.run_offset) == (0, None)


def test_a_new_verdict_has_no_baseline_yet(session: Session, run: Run, series: Series) -> None:
    v = added(session, Verdict(run_id=run.id, series_id=series.id, verdict="new"))
    assert (v.baseline_results, v.baseline_commits, v.outlier, v.offset_controls) == (
        0,
        [],
        False,
        0,
    )
    assert (v.segment_note, v.note) == ("", "")


@pytest.mark.parametrize("parent", ["run", "series", "result"])
def test_a_verdict_goes_with_its_run_series_and_result(
    session: Session, run: Run, workload: RunWorkload, series: Series, parent: str
) -> None:
    result = added(session, Result(run_id=run.id, run_workload_id=workload.id,
                                   series_id=series.id, commit_id=run.commit_id, branch="main",
                                   committed_at=T0, n=1, median=1.0, q1=1.0, q3=1.0, min=1.0,
                                   max=1.0, mean=1.0, stdev=0.0, samples=b"",
                                   method="cuda_events"))  # fmt: skip
    added(session, Verdict(run_id=run.id, series_id=series.id, result_id=result.id,
                           verdict="unchanged"))  # fmt: skip
    session.delete({"run": run, "series": series, "result": result}[parent])
    session.flush()
    assert count(session, Verdict) == 0


def test_a_verdict_outlives_its_segments_commit_and_the_series_it_was_redefined_from(
    session: Session, repo: Repository, run: Run, series: Series
) -> None:
    start = added(session, commit_row(repo, "b" * 40))
    old = added(session, series_row(repo, "o" * 64))
    v = added(session, Verdict(run_id=run.id, series_id=series.id, verdict="unchanged",
                               segment_start_commit_id=start.id,
                               redefined_from_series_id=old.id))  # fmt: skip
    session.delete(start)
    session.delete(old)
    session.flush()
    session.refresh(v)
    assert (v.segment_start_commit_id, v.redefined_from_series_id) == (None, None)


def test_a_work_verdict_from_before_labels_and_pairs_reads_back_empty(
    session: Session, workload: RunWorkload
) -> None:
    pk = insert_bare(session, "work_verdicts", run_workload_id=workload.id, kernel="k",
                     counter="smsp__inst_executed.sum", value=1e6, verdict="same")  # fmt: skip
    read = session.get(WorkVerdict, pk)
    assert (read.label, read.pairs, read.tolerance) == ("", 0, None)


def test_work_and_measure_verdicts_go_with_the_workload_and_outlive_the_base_run(
    session: Session, repo: Repository, commit: Commit, run: Run, workload: RunWorkload
) -> None:
    base = added(session, run_row(repo, commit, uuid="base"))
    work = added(session, WorkVerdict(run_workload_id=workload.id, kernel="k", counter="c",
                                      value=2.0, base_value=1.0, base_run_id=base.id,
                                      verdict="changed"))  # fmt: skip
    measure = added(session, MeasureVerdict(run_workload_id=workload.id,
                                            measure="peak_memory_bytes", value=2.0,
                                            base_run_id=base.id, verdict="unchanged"))  # fmt: skip
    session.delete(base)
    session.flush()
    session.refresh(work)
    session.refresh(measure)
    assert (work.base_run_id, measure.base_run_id) == (None, None)
    session.delete(workload)
    session.flush()
    assert (count(session, WorkVerdict), count(session, MeasureVerdict)) == (0, 0)


def test_a_series_is_confirmed_once_per_run_queued_first(
    session: Session, run: Run, series: Series
) -> None:
    first = added(session, Confirmation(run_id=run.id, series_id=series.id))
    assert first.state == "queued" and first.decided_at is None
    with pytest.raises(IntegrityError):
        added(session, Confirmation(run_id=run.id, series_id=series.id))
    session.rollback()


def test_a_confirmation_outlives_its_base_series_base_commit_and_job(
    session: Session, repo: Repository, run: Run, series: Series
) -> None:
    base_commit = added(session, commit_row(repo, "b" * 40))
    base_series = added(session, series_row(repo, "o" * 64))
    job = added(session, Job(repository_id=repo.id, commit_sha=base_commit.sha, branch="main",
                             kind="confirm"))  # fmt: skip
    row = added(session, Confirmation(run_id=run.id, series_id=series.id,
                                      base_series_id=base_series.id,
                                      base_commit_id=base_commit.id, job_id=job.id))  # fmt: skip
    for parent in (base_commit, base_series, job):
        session.delete(parent)
    session.flush()
    session.refresh(row)
    assert (row.base_series_id, row.base_commit_id, row.job_id) == (None, None, None)
    session.delete(run)
    session.flush()
    assert count(session, Confirmation) == 0
