"""Alerts as the API shows them (service.store.alerts.rows), on SQLite and PostgreSQL, from an
alert the service's own analysis opened on a stored history: every commit it refers to named by
its sha (None where it has none), its series with the repository's name, its state changes only
when asked for and in the order they happened; and the alerts a triage takes, each once, by id."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.alerts.lifecycle import transition
from service.models import Alert, Commit
from service.store.alerts.rows import alerts_public, alerts_to_triage
from tests.documents import sha_for
from tests.service.store.conftest import StoreLine


@pytest.fixture
def alert_id(factory: sessionmaker[Session], store_line: StoreLine) -> int:
    """The alert of c4, whose kernel a is 10% slower than at c0-c3."""
    store_line([{"a": 100.0, "b": 50.0}] * 4 + [{"a": 110.0, "b": 50.0}], analyse=True)
    with factory() as session:
        (alert,) = session.scalars(select(Alert)).all()
        return alert.id


def commit_id(session: Session, label: str) -> int:
    return session.scalars(select(Commit.id).where(Commit.sha == sha_for(label))).one()


def test_an_alert_names_its_commits_series_and_repository(
    factory: sessionmaker[Session], alert_id: int
) -> None:
    with factory() as session:
        (shown,) = alerts_public(session, [session.get(Alert, alert_id)])
    assert shown.id == alert_id
    assert shown.commit == sha_for("c4")
    assert shown.base_commit == sha_for("c3")
    assert shown.first_bad_commit is None and shown.fixed_by_commit is None
    assert (shown.series.repository, shown.series.kernel) == ("acme/kernels", "a")
    assert shown.branch == "main"
    assert shown.change == pytest.approx(0.1, abs=0.02)
    with factory() as session, session.begin():
        alert = session.get(Alert, alert_id)
        alert.first_bad_commit_id = commit_id(session, "c2")
        alert.fixed_by_commit_id = commit_id(session, "c1")
    with factory() as session:
        (shown,) = alerts_public(session, [session.get(Alert, alert_id)])
    assert (shown.first_bad_commit, shown.fixed_by_commit) == (sha_for("c2"), sha_for("c1"))


def test_state_changes_come_only_when_asked_for_oldest_first(
    factory: sessionmaker[Session], alert_id: int
) -> None:
    with factory() as session, session.begin():
        alert = session.get(Alert, alert_id)
        transition(session, alert, "acknowledged", "ada", note="looking at it")
        transition(session, alert, "fixed", "ada", note="reverted")
    with factory() as session:
        alert = session.get(Alert, alert_id)
        (bare,) = alerts_public(session, [alert])
        (full,) = alerts_public(session, [alert], events=True)
    assert bare.events == []
    assert [(e.from_state, e.to_state, e.actor) for e in full.events] == [
        (None, "suspected", "kernelwatch"),
        ("suspected", "acknowledged", "ada"),
        ("acknowledged", "fixed", "ada"),
    ]
    assert full.events[-1].note == "reverted"
    assert (full.state, full.updated_by) == ("fixed", "ada")


def test_a_triage_takes_each_named_alert_once_by_id(
    factory: sessionmaker[Session], alert_id: int
) -> None:
    with factory() as session, session.begin():
        first = session.get(Alert, alert_id)
        second = Alert(repository_id=first.repository_id, series_id=first.series_id,
                       run_id=first.run_id, commit_id=first.commit_id, branch="main",
                       change=0.2)  # fmt: skip
        session.add(second)
        session.flush()
        second_id = second.id
    with factory() as session, session.begin():
        taken = alerts_to_triage(session, [second_id, alert_id, second_id, 10_000])
        assert [a.id for a in taken] == [alert_id, second_id]
        assert alerts_to_triage(session, []) == []
