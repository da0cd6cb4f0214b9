"""service/models/runner.py: the labels a runner may claim jobs by are its token's, less any it
reported otherwise (a report narrows, never widens), plus runner=<its name>; and on the migrated
database a runner's name and token hash are unique (many runners may have no token), and a
runner row from before its reported labels and health were recorded reads back {} and ""."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.models import Runner
from service.models.runner import claimable_labels
from tests.service.models.conftest import T0, added, count, insert_bare


def test_a_runner_claims_by_its_tokens_labels_and_its_name() -> None:
    runner = Runner(name="h100-1", labels={"gpu": "h100", "pool": "ci"}, reported_labels={})
    assert claimable_labels(runner) == {"gpu": "h100", "pool": "ci", "runner": "h100-1"}


def test_a_label_reported_otherwise_is_dropped() -> None:
    # The token says h100; the host says a100 (a card swapped): it claims no h100 job.
    runner = Runner(name="r", labels={"gpu": "h100", "pool": "ci"}, reported_labels={"gpu": "a100"})
    assert claimable_labels(runner) == {"pool": "ci", "runner": "r"}


def test_a_reported_label_the_token_lacks_is_not_added() -> None:
    runner = Runner(name="r", labels={"gpu": "h100"}, reported_labels={"gpu": "h100", "big": "1"})
    assert claimable_labels(runner) == {"gpu": "h100", "runner": "r"}


def test_the_runner_label_is_always_its_own_name() -> None:
    runner = Runner(name="r", labels={"runner": "someone-else"}, reported_labels={})
    assert claimable_labels(runner) == {"runner": "r"}


def test_a_runner_without_labels_yet_claims_only_by_name() -> None:
    # Not flushed: its JSON columns are still None, as on a row being built.
    assert claimable_labels(Runner(name="r")) == {"runner": "r"}


def test_a_second_runner_of_the_same_name_is_refused(session: Session) -> None:
    added(session, Runner(name="h100-1"))
    with pytest.raises(IntegrityError):
        added(session, Runner(name="h100-1"))
    session.rollback()


def test_a_token_hash_belongs_to_one_runner_but_many_may_have_none(session: Session) -> None:
    added(session, Runner(name="a", token_hash="t" * 64))
    added(session, Runner(name="b"))
    added(session, Runner(name="c"))
    assert count(session, Runner) == 3
    with pytest.raises(IntegrityError):
        added(session, Runner(name="d", token_hash="t" * 64))
    session.rollback()


def test_a_new_runner_is_healthy_and_has_no_labels(session: Session) -> None:
    runner = added(session, Runner(name="r"))
    assert (runner.host, runner.labels, runner.reported_labels, runner.environment) == (
        "", {}, {}, {},
    )  # fmt: skip
    assert runner.unhealthy_since is None and runner.unhealthy_reason == ""


def test_a_runner_from_before_reports_and_health_reads_back_empty(session: Session) -> None:
    pk = insert_bare(session, "runners", name="old", host="h", labels={"gpu": "h100"},
                     environment={}, created_at=T0)  # fmt: skip
    read = session.get(Runner, pk)
    assert (read.reported_labels, read.unhealthy_reason) == ({}, "")
    assert claimable_labels(read) == {"gpu": "h100", "runner": "old"}
