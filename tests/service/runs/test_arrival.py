"""service.runs.arrival.receive: a posted document validated, stored, followed up and judged."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import session_factory
from service.core.errors import Conflict, DocumentConflict
from service.core.settings import Settings
from service.models import Confirmation, Job, Repository, Run, Verdict
from service.runs.arrival import Arrival, receive
from service.schemas.digest import document_digest
from tests.documents import document, sha_for
from tests.history import Line
from tests.service.api.routes.test_webhooks import run_apart
from tests.service.histories.test_doubt_confirmed import BASE, KERNELS
from tests.service.runs.test_runner_results import LEVELS, SLOWER, claim, doubted


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return session_factory(engine)


def arrive(
    factory: sessionmaker[Session], settings: Settings, raw: Any, runner_id: int | None = None
) -> Arrival:
    return run_apart(receive(factory, settings, raw, document_digest(raw), runner_id))


def runs(factory: sessionmaker[Session]) -> list[Run]:
    with factory() as session:
        return list(session.scalars(select(Run).order_by(Run.id)))


def verdicts_of(factory: sessionmaker[Session], run_uuid: str) -> list[str]:
    with factory() as session:
        return sorted(
            session.scalars(
                select(Verdict.verdict).join(Run, Run.id == Verdict.run_id)
                .where(Run.run_uuid == run_uuid)
            )
        )  # fmt: skip


def test_a_document_is_stored_and_judged_before_the_answer(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    raw = document(commit="c0", medians={"a": 100.0, "b": 50.0})
    got = arrive(factory, settings, raw)
    assert (got.outcome.run_id, got.outcome.stored, got.outcome.results) == (raw["run_id"], True, 2)
    assert got.judged == [raw["run_id"]]
    (run,) = runs(factory)
    assert run.id == got.outcome.pk and run.analysed_at is not None
    assert verdicts_of(factory, raw["run_id"]) == ["new", "new"]


def test_without_judging_in_the_request_the_run_waits_for_the_worker(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    deferred = settings.model_copy(update={"analyse_in_request": False})
    got = arrive(factory, deferred, document(commit="c0"))
    assert got.outcome.stored and got.judged == []
    (run,) = runs(factory)
    assert run.analysed_at is None


def test_the_same_document_again_stores_and_judges_nothing(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    raw = document(commit="c0")
    arrive(factory, settings, raw)
    again = arrive(factory, settings, raw)
    assert (again.outcome.stored, again.outcome.results, again.judged) == (False, 1, [])
    assert len(runs(factory)) == 1


def test_other_contents_under_a_stored_run_id_are_a_conflict(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    raw = document(commit="c0", run_id="run-of-c0")
    arrive(factory, settings, raw)
    other = document(commit="c0", run_id="run-of-c0", medians={"gemm_bias_act_f32": 120.0})
    with pytest.raises(DocumentConflict, match="run run-of-c0 is already stored with different"):
        arrive(factory, settings, other)
    assert len(runs(factory)) == 1


def test_an_invalid_document_is_refused_naming_the_field_and_stores_nothing(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    raw = document(commit="c0")
    raw["commit"]["sha"] = "not-a-sha"
    with pytest.raises(ValidationError) as refused:
        arrive(factory, settings, raw)
    assert [e["loc"] for e in refused.value.errors()] == [("commit", "sha")]
    assert runs(factory) == []


def test_a_clone_url_runners_may_not_use_is_dropped_and_the_run_kept(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    strict = settings.model_copy(update={"allow_local_clone_urls": False})
    raw = document(commit="c0")
    raw["repository"]["url"] = "ext::sh -c touch% /tmp/owned"
    assert arrive(factory, strict, raw).outcome.stored
    with factory() as session:
        repository = session.scalars(select(Repository)).one()
    assert (repository.name, repository.clone_url) == ("acme/kernels", None)


def test_a_pull_requests_run_queues_its_merge_base(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    raw = document(commit="pr-head", branch="pull/7", ancestors=["main-1", "main-0"])
    raw["pull_request"] = {"number": 7, "base_ref": "main", "merge_base": sha_for("main-1")}
    assert arrive(factory, settings, raw).outcome.stored
    with factory() as session:
        jobs = session.execute(select(Job.kind, Job.commit_sha, Job.branch, Job.summary)).all()
    assert jobs == [("run", sha_for("main-1"), "main", "merge base of #7")]


def test_a_paired_base_is_kept_as_the_runs_confirmations_before_its_verdicts(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    line = Line(KERNELS, seed=21)
    arrive(factory, settings, line.document(0, BASE))
    got = arrive(factory, settings, line.paired(1, 0, LEVELS))
    with factory() as session:
        kept = session.scalar(
            select(func.count()).where(Confirmation.run_id == got.outcome.pk,
                                       Confirmation.job_id.is_(None))
        )  # fmt: skip
        queued = session.scalar(select(func.count()).select_from(Job))
    assert kept == 3
    # Its own rerun settled `moved` when it was judged: regressed at once, no job queued.
    assert verdicts_of(factory, got.outcome.run_id) == ["regressed", "unchanged", "unchanged"]
    assert queued == 0


def test_a_runners_document_is_taken_only_under_a_lease(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    line = Line(KERNELS, seed=22)
    doubted(factory, line)
    lease = claim(factory)
    with pytest.raises(Conflict, match="needs job_id and lease_token"):
        arrive(factory, settings, line.paired(1, 0, LEVELS), runner_id=lease.runner_id)
    assert len(runs(factory)) == 2


def test_a_confirmation_judges_the_run_it_was_for_again(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    line = Line(KERNELS, seed=23)
    doubted(factory, line)
    head = line.document(1, SLOWER)["run_id"]
    assert verdicts_of(factory, head) == ["pending", "unchanged", "unchanged"]
    lease = claim(factory)
    got = arrive(factory, settings, lease.sign(line.paired(1, 0, LEVELS)), lease.runner_id)
    assert got.judged == [head]
    assert got.outcome.detail is not None and got.outcome.detail.endswith(" open")
    assert verdicts_of(factory, head) == ["regressed", "unchanged", "unchanged"]
