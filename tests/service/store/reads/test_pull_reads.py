"""The pull requests page's read (service.store.reads.pull_reads), on SQLite and PostgreSQL,
over runs stored through the ingest and judged by the service's own analysis: the pull requests
newest activity first, of one repository or state where asked; each with the newest run of its
head on its own branch (not an older head's, nor the same commit's on another branch), that
run's merge base, whether it was analysed and its verdict counts; a pull request whose head has
no run yet listed all the same."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.models import PullRequest, Repository
from service.models.base import utcnow
from service.store.reads.pull_reads import pulls
from tests.documents import document, sha_for
from tests.service.store.conftest import Store


def pull_run(number: int, head: str, run_id: str, **kw: Any) -> dict[str, Any]:
    doc = document(commit=head, branch=f"pull/{number}", run_id=run_id, **kw)
    doc["pull_request"] = {"number": number, "base_ref": "main", "merge_base": sha_for("base")}
    return doc


@pytest.fixture
def opened(factory: sessionmaker[Session], store: Store) -> None:
    """#7 (head h7, measured twice, an older head and its commit on main too), #8 (head h8,
    measured and analysed), #9 (closed, another repository, no run)."""
    store(pull_run(7, "old7", "run-7-old"))
    store(pull_run(7, "h7", "run-7-first"), analyse=True)
    store(pull_run(7, "h7", "run-7-newest"))
    store(document(commit="h7", run_id="run-h7-on-main"))
    store(pull_run(8, "h8", "run-8-head", medians={"a": 100.0, "b": 50.0}), analyse=True)
    now = utcnow()
    with factory() as session, session.begin():
        repo = session.scalars(select(Repository)).one()
        other = Repository(name="acme/other")
        session.add(other)
        session.flush()
        session.add_all([
            PullRequest(repository_id=repo.id, number=7, state="open", head_sha=sha_for("h7"),
                        base_ref="main", updated_at=now - timedelta(hours=2)),
            PullRequest(repository_id=repo.id, number=8, state="open", head_sha=sha_for("h8"),
                        base_ref="main", updated_at=now - timedelta(hours=1)),
            PullRequest(repository_id=other.id, number=9, state="closed",
                        head_sha=sha_for("h9"), base_ref="main", updated_at=now),
        ])  # fmt: skip


def listed(factory: sessionmaker[Session], **kw: Any) -> list[tuple[str, int]]:
    with factory() as session:
        return [(row.repository, row.pull.number) for row in pulls(session, **kw)]


@pytest.mark.usefixtures("opened")
def test_pull_requests_are_listed_newest_activity_first_by_repository_and_state(
    factory: sessionmaker[Session],
) -> None:
    every = [("acme/other", 9), ("acme/kernels", 8), ("acme/kernels", 7)]
    assert listed(factory, repository=None, state="all", limit=10) == every
    assert listed(factory, repository=None, state="all", limit=2) == every[:2]
    assert listed(factory, repository="acme/kernels", state="all", limit=10) == every[1:]
    assert listed(factory, repository=None, state="open", limit=10) == every[1:]
    assert listed(factory, repository=None, state="merged", limit=10) == []


@pytest.mark.usefixtures("opened")
def test_each_pull_request_shows_its_heads_newest_run_on_its_branch(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session:
        rows = {row.pull.number: row for row in pulls(session, None, "all", 10)}
    seven, eight, nine = rows[7], rows[8], rows[9]
    # The newer of the head's two runs, not yet analysed: no counts to show.
    assert (seven.run_uuid, seven.merge_base, seven.analysed, seven.verdict_counts) == (
        "run-7-newest",
        sha_for("base"),
        False,
        {},
    )
    assert (eight.run_uuid, eight.analysed, eight.verdict_counts) == (
        "run-8-head",
        True,
        {"new": 2},
    )
    assert (nine.run_uuid, nine.merge_base, nine.analysed, nine.verdict_counts) == (
        None,
        None,
        False,
        {},
    )
