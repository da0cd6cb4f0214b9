"""The runners' rows (service.store.jobs.runners), on SQLite and PostgreSQL: a token is issued
to a runner made where there is none, refused over a live one unless rotated (its labels kept
where none are given), and given again once revoked; revoking needs a token to revoke; an
agent's registration keeps the labels it reports apart and ends an earlier fault; a fault keeps
the time it began; the demo's runner is made once; and a repository's label sets replace the
ones it had."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from service.core.errors import Conflict, NotFound
from service.models import Repository, Runner
from service.store.jobs import runners


def runner(factory: sessionmaker[Session], name: str = "h100-a") -> Runner:
    with factory() as session:
        return session.scalars(select(Runner).where(Runner.name == name)).one()


def test_a_token_is_issued_once_unless_rotated_or_revoked(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        runners.issue_token(session, "h100-a", {"gpu": "h100"}, "1" * 64, rotate=False)
    with factory() as session, session.begin(), pytest.raises(Conflict, match="--rotate"):
        runners.issue_token(session, "h100-a", {}, "2" * 64, rotate=False)
    with factory() as session, session.begin():
        runners.issue_token(session, "h100-a", {}, "2" * 64, rotate=True)
    rotated = runner(factory)
    assert (rotated.token_hash, rotated.labels) == ("2" * 64, {"gpu": "h100"})
    with factory() as session, session.begin():
        runners.revoke_token(session, "h100-a")
    assert runner(factory).revoked_at is not None
    with factory() as session, session.begin():
        runners.issue_token(session, "h100-a", {"gpu": "h200"}, "3" * 64, rotate=False)
    reissued = runner(factory)
    assert (reissued.token_hash, reissued.revoked_at, reissued.labels) == (
        "3" * 64,
        None,
        {"gpu": "h200"},
    )
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Runner)) == 1


def test_revoking_needs_a_runner_with_a_token(factory: sessionmaker[Session]) -> None:
    with factory() as session, session.begin():
        runners.demo_runner(session, "tokenless", {})
    for name in ("tokenless", "nobody"):
        with factory() as session, pytest.raises(NotFound, match=f"no runner named '{name}'"):
            runners.revoke_token(session, name)


def test_a_registration_keeps_the_reported_labels_apart_and_ends_a_fault(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        made = runners.issue_token(session, "h100-a", {"gpu": "h100"}, "1" * 64, rotate=False)
        runners.healthy(made, False, "driver gone")
        runners.register(made, "gpu-7", {"driver": "580"}, {"gpu": "a100"})
    registered = runner(factory)
    assert (registered.host, registered.environment) == ("gpu-7", {"driver": "580"})
    assert (registered.labels, registered.reported_labels) == ({"gpu": "h100"}, {"gpu": "a100"})
    assert (registered.unhealthy_since, registered.unhealthy_reason) == (None, "")
    assert registered.last_seen_at is not None


def test_a_fault_keeps_the_time_it_began_and_its_latest_reason(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        made = runners.issue_token(session, "h100-a", {}, "1" * 64, rotate=False)
        runners.healthy(made, False, "  no GPU  \n")
    began = runner(factory).unhealthy_since
    assert runner(factory).unhealthy_reason == "no GPU"
    with factory() as session, session.begin():
        again = session.get(Runner, runner(factory).id)
        runners.healthy(again, False, "still no GPU")
    faulty = runner(factory)
    assert began is not None and faulty.unhealthy_since == began
    assert faulty.unhealthy_reason == "still no GPU"
    assert faulty.last_seen_at > began


def test_the_demos_runner_is_made_once_and_seen_with_the_recordings_environment(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        first = runners.demo_runner(session, "demo-h200", {"gpu": "H200"})
        first_id, first_seen = first.id, first.last_seen_at
    with factory() as session, session.begin():
        again = runners.demo_runner(session, "demo-h200", {"gpu": "H200 NVL"})
        assert again.id == first_id
    seen = runner(factory, "demo-h200")
    assert (seen.host, seen.environment, seen.token_hash) == ("demo", {"gpu": "H200 NVL"}, None)
    assert seen.last_seen_at > first_seen


def test_a_repositorys_label_sets_replace_its_old_ones(factory: sessionmaker[Session]) -> None:
    with factory() as session, session.begin():
        made = runners.label_sets(session, "acme/k", "https://example.com/acme/k.git",
                                  [{"gpu": "h100"}])  # fmt: skip
        assert made.runner_label_sets == [{"gpu": "h100"}]
    with factory() as session, session.begin():
        runners.label_sets(session, "acme/k", None, [{"gpu": "a100"}, {"gpu": "h200"}])
    with factory() as session:
        repo = session.scalars(select(Repository)).one()
    assert repo.runner_label_sets == [{"gpu": "a100"}, {"gpu": "h200"}]
    assert repo.clone_url == "https://example.com/acme/k.git"
