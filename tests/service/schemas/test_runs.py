"""The runs routes' answers of service/schemas/runs.py, built from a run's row: the run is named
by the id its document gave (never the database's), its commit by the sha and its repository by
the name the caller read; a listing says whether the run was analysed and whether it is a pull
request's, and leaves the environment and logs to the run's own answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from service.models import Run
from service.schemas.runs import CommitListed, RunListed, RunPublic, RunStored

START = datetime(2026, 11, 1, 12, tzinfo=UTC)
SHA = "c" * 40


def run(**given: object) -> Run:
    fields = {
        "id": 41, "run_uuid": "run-0001-h200", "commit_id": 9, "job_id": 3, "suite": "gemm",
        "branch": "pull/12", "status": "succeeded", "build_status": "ok",
        "fingerprint": "00000000000000aa", "gpu_name": "NVIDIA H200",
        "environment": {"driver_version": "560.35"}, "build_log_tail": "ptxas ok",
        "log_tail": "done", "started_at": START, "finished_at": START + timedelta(minutes=3),
        "received_at": START + timedelta(minutes=4), "analysed_at": None, "pull_request": 12,
    }  # fmt: skip
    return Run(**{**fields, **given})


def test_a_run_is_named_by_its_documents_id_commit_sha_and_repository_name() -> None:
    public = RunPublic.from_run(run(), sha=SHA, repository="acme/kernels", results=17)
    assert (public.run_id, public.commit, public.repository) == ("run-0001-h200", SHA,
                                                                 "acme/kernels")  # fmt: skip
    assert (public.results, public.job_id, public.gpu_name) == (17, 3, "NVIDIA H200")


def test_a_runs_answer_carries_its_environment_logs_and_times() -> None:
    public = RunPublic.from_run(run(), sha=SHA, repository="acme/kernels", results=0)
    assert public.environment == {"driver_version": "560.35"}
    assert (public.build_log_tail, public.log_tail) == ("ptxas ok", "done")
    assert public.finished_at - public.started_at == timedelta(minutes=3)
    assert public.received_at == START + timedelta(minutes=4)


@pytest.mark.parametrize(("analysed_at", "analysed"), [(None, False), (START, True)])
def test_a_listed_run_is_analysed_once_its_verdicts_are_decided(
    analysed_at: datetime | None, analysed: bool
) -> None:
    listed = RunListed.from_run(run(analysed_at=analysed_at), sha=SHA, repository="acme/kernels")
    assert listed.analysed is analysed


def test_a_listed_run_says_its_pull_request_and_leaves_the_rest_to_its_own_answer() -> None:
    listed = RunListed.from_run(run(), sha=SHA, repository="acme/kernels")
    assert (listed.run_id, listed.pull_request, listed.branch) == ("run-0001-h200", 12, "pull/12")
    assert not {"environment", "log_tail", "build_log_tail", "job_id"} & set(listed.model_dump())
    branch_run = RunListed.from_run(run(pull_request=None), sha=SHA, repository="acme/kernels")
    assert branch_run.pull_request is None


def test_the_stored_answer_and_a_listed_commit_keep_what_they_are_given() -> None:
    stored = RunStored(run_id="run-0001-h200", stored=False, results=3, detail="already stored")
    assert stored.model_dump() == {"run_id": "run-0001-h200", "stored": False, "results": 3,
                                   "detail": "already stored"}  # fmt: skip
    commit = CommitListed(
        sha=SHA, repository="acme/kernels", subject="faster gemm", author_name="A",
        committed_at="2026-11-01T12:00:00Z", runs=2, branches=["main", "pull/12"],
    )  # fmt: skip
    assert commit.committed_at == START and commit.branches == ["main", "pull/12"]
