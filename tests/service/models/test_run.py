"""service/models/run.py on the migrated database: a run's uuid is unique; a run written with
only what a document must say has the defaults the ingest relies on (work changes a notice, not
analysed yet, no pull request); a workload is unique per run by name and parameters; a kernel's
build resources are unique per run; a workload has one correctness outcome; rows written without
a workload's choices, compiled kernels or measures read back {} and [] (the database's defaults,
what runs from before those columns have); the backlogs' indexes hold only the rows still
waiting; deleting a run deletes everything recorded for it, deleting its runner keeps it."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, inspect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.models import (
    BuildResource,
    Commit,
    CorrectnessOutcome,
    Repository,
    Run,
    Runner,
    RunWorkload,
)
from tests.service.models.conftest import added, count, insert_bare, run_row, workload_row


def test_a_second_run_with_the_same_uuid_is_refused(
    session: Session, repo: Repository, commit: Commit, run: Run
) -> None:
    with pytest.raises(IntegrityError):
        added(session, run_row(repo, commit, uuid=run.run_uuid))
    session.rollback()


def test_a_new_run_waits_for_its_analysis_with_the_ingests_defaults(
    session: Session, run: Run
) -> None:
    session.commit()
    session.expire_all()
    read = session.get(Run, run.id)
    # A work-counter change alone is a notice unless the suite asks for "fail".
    assert read.work_changes == "notice"
    assert (read.gpu_name, read.environment, read.build_log_tail, read.log_tail) == ("", {}, "", "")
    # NULL until the backlog has judged it and re-segmented its series.
    assert read.analysed_at is None and read.change_points_at is None
    assert (read.pull_request, read.base_ref, read.merge_base_sha) == (None, None, None)
    assert read.received_at.tzinfo is not None


def test_a_workload_is_unique_per_run_by_name_and_parameters(
    session: Session, repo: Repository, commit: Commit, run: Run, workload: RunWorkload
) -> None:
    added(session, workload_row(run, workload.name, params_key="m=16"))  # other parameters
    added(session, workload_row(run, "gemm_bwd", workload.params_key))  # another workload
    other = added(session, run_row(repo, commit, uuid="run-2"))
    added(session, workload_row(other, workload.name, workload.params_key))  # another run
    with pytest.raises(IntegrityError):
        added(session, workload_row(run, workload.name, workload.params_key))
    session.rollback()


def test_a_kernels_build_resources_are_unique_per_run(session: Session, run: Run) -> None:
    def resource() -> BuildResource:
        return BuildResource(run_id=run.id, kernel="gemm_bias_act_fwd", registers=128,
                             shared_bytes=0, spill_stores_bytes=0, spill_loads_bytes=0)  # fmt: skip

    assert added(session, resource()).arch == ""
    with pytest.raises(IntegrityError):
        added(session, resource())
    session.rollback()


def test_a_workload_has_one_correctness_outcome(session: Session, workload: RunWorkload) -> None:
    def outcome() -> CorrectnessOutcome:
        return CorrectnessOutcome(run_workload_id=workload.id, passed=True, error_norm=0.0,
                                  tolerance=1e-4, norm="rel_l2", precision="fp32")  # fmt: skip

    assert added(session, outcome()).unwritten == 0
    with pytest.raises(IntegrityError):
        added(session, outcome())
    session.rollback()


def test_a_workload_written_without_the_newer_columns_reads_back_empty(
    session: Session, run: Run
) -> None:
    pk = insert_bare(session, "run_workloads", run_id=run.id, name="gemm_fwd", params={},
                     params_key="m=8", kernels=[], status="ok", error="", timeline_note="",
                     ncu_note="")  # fmt: skip
    read = session.get(RunWorkload, pk)
    assert (read.choices, read.compiled, read.measures) == ({}, [], {})


def test_the_backlog_indexes_hold_only_the_rows_still_waiting(engine: Engine) -> None:
    indexes = {i["name"]: i for i in inspect(engine).get_indexes("runs")}
    where = {
        name: str(indexes[name]["dialect_options"][f"{engine.dialect.name}_where"]).strip("()")
        for name in ("ix_runs_analysis_pending", "ix_runs_change_points_pending",
                     "ix_runs_merge_base")
    }  # fmt: skip
    assert where == {
        "ix_runs_analysis_pending": "analysed_at IS NULL",
        "ix_runs_change_points_pending": "change_points_at IS NULL",
        "ix_runs_merge_base": "merge_base_sha IS NOT NULL",
    }


def test_deleting_a_run_deletes_everything_recorded_for_it(
    session: Session, run: Run, workload: RunWorkload
) -> None:
    added(session, CorrectnessOutcome(run_workload_id=workload.id, passed=True, tolerance=1e-4,
                                      norm="rel_l2", precision="fp32"))  # fmt: skip
    added(session, BuildResource(run_id=run.id, kernel="k", registers=1, shared_bytes=0,
                                 spill_stores_bytes=0, spill_loads_bytes=0))  # fmt: skip
    session.delete(run)
    session.flush()
    left = [count(session, m) for m in (RunWorkload, CorrectnessOutcome, BuildResource)]
    assert left == [0, 0, 0]


def test_deleting_its_commit_deletes_the_run(
    session: Session, commit: Commit, run: Run, workload: RunWorkload
) -> None:
    session.delete(commit)
    session.flush()
    assert (count(session, Run), count(session, RunWorkload)) == (0, 0)


def test_deleting_its_runner_keeps_the_run(session: Session, run: Run) -> None:
    runner = added(session, Runner(name="h100-1"))
    run.runner_id = runner.id
    session.flush()
    session.delete(runner)
    session.flush()
    session.refresh(run)
    assert run.runner_id is None
