"""Runs and commits listed for the API (service.store.reads.listings), on SQLite and
PostgreSQL, over runs stored through the ingest: runs newest received first, each with its
commit's sha and its repository's name, filtered by repository, branch, suite and a sha prefix
(taken literally, never as a pattern); commits that have runs newest committed first, with how
many runs and the branches they were measured on, counted on the branch asked for alone."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.models import Repository
from service.store.reads.listings import newest_commits, newest_runs
from tests.documents import document, sha_for
from tests.service.store.conftest import Store


def test_runs_are_listed_newest_received_first_and_filtered(
    factory: sessionmaker[Session], store: Store
) -> None:
    # Received in this order; their commits' times say otherwise.
    store(document(commit="c1", minutes=5, run_id="run-c1-main"))
    store(document(commit="c0", minutes=0, run_id="run-c0-release", branch="release"))
    torch = document(commit="c1", minutes=5, run_id="run-c1-torch")
    torch["suite"] = "torch"
    store(torch)
    store(document(commit="x0", repository="acme/other", run_id="run-x0-other"))
    with factory() as session:
        other = session.scalars(select(Repository.id).where(Repository.name == "acme/other"))
        other_id = other.one()

        def listed(limit: int = 10, **kw: object) -> list[str]:
            rows = newest_runs(session, limit, **kw)  # type: ignore[arg-type]
            return [run.run_uuid for run, _, _ in rows]

        assert listed() == ["run-x0-other", "run-c1-torch", "run-c0-release", "run-c1-main"]
        assert listed(limit=2) == ["run-x0-other", "run-c1-torch"]
        assert listed(repository_id=other_id) == ["run-x0-other"]
        assert listed(branch="release") == ["run-c0-release"]
        assert listed(suite="torch") == ["run-c1-torch"]
        assert listed(sha_prefix=sha_for("c1")[:6]) == ["run-c1-torch", "run-c1-main"]
        assert listed(sha_prefix="%") == []  # a LIKE wildcard is a character like any other
        (run, sha, repository), *_ = newest_runs(session, 1)
    assert (run.run_uuid, sha, repository) == ("run-x0-other", sha_for("x0"), "acme/other")


def test_commits_are_listed_newest_committed_first_with_their_runs_and_branches(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="c0", minutes=0))
    store(document(commit="c2", minutes=2, branch="release"))
    store(document(commit="c2", minutes=2))
    store(document(commit="c2", minutes=2))
    store(document(commit="c1", minutes=1, branch="release"))
    with factory() as session:
        every = newest_commits(session, 10)
        main = newest_commits(session, 10, branch="main")
        assert newest_commits(session, 10, repository_id=10_000) == []
    assert [(c["sha"], c["runs"], c["branches"]) for c in every] == [
        (sha_for("c2"), 3, ["main", "release"]),
        (sha_for("c1"), 1, ["release"]),
        (sha_for("c0"), 1, ["main"]),
    ]
    assert every[0]["subject"] == "commit c2" and every[0]["repository"] == "acme/kernels"
    # On one branch: its runs alone are counted, and the other branches go unnamed.
    assert [(c["sha"], c["runs"], c["branches"]) for c in main] == [
        (sha_for("c2"), 2, ["main"]),
        (sha_for("c0"), 1, ["main"]),
    ]
