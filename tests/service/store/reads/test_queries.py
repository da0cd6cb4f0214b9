"""The API routes' lookups (service.store.reads.queries), on SQLite and PostgreSQL, over runs
stored through the ingest: an unknown repository is not found, saying how one is registered; a
branch without runs is not found, naming the branches there are (pull request branches counted,
not named; at most BRANCH_LIST named); jobs answered with their repository's and runner's
names, listed newest first by state, repository and sha prefix, and counted where they wait; a
run by its own id; the runner and repository lookups; and the database's ping, which says the
schema's revision, None where the database has no kernelwatch schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import create_db_engine
from service.core.errors import NotFound
from service.core.migrate import head_revision
from service.models import Repository, Run, Runner
from service.store.jobs import queue
from service.store.reads import queries
from tests.documents import document, sha_for
from tests.service.store.conftest import Store


def test_an_unknown_repository_is_not_found(factory: sessionmaker[Session], store: Store) -> None:
    store(document(commit="c0"))
    with factory() as session:
        assert queries.repository_named(session, "acme/kernels").name == "acme/kernels"
        assert queries.repository_or_none(session, "acme/nothing") is None
        assert queries.first_repository(session).name == "acme/kernels"
        with pytest.raises(NotFound, match="registered by its first push or run"):
            queries.repository_named(session, "acme/nothing")


def test_a_branch_without_runs_is_not_found_naming_the_branches_there_are(
    factory: sessionmaker[Session], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i, branch in enumerate(["main", "release", "dev"]):
        store(document(commit=f"c{i}", branch=branch))
    for number in (7, 8):
        doc = document(commit=f"p{number}", branch=f"pull/{number}")
        doc["pull_request"] = {"number": number, "base_ref": "main"}
        store(doc)
    with factory() as session:
        repo = queries.repository_named(session, "acme/kernels")
        queries.check_branch(session, repo.id, repo.name, "release")
        with pytest.raises(NotFound) as missing:
            queries.check_branch(session, repo.id, repo.name, "mian")
        assert str(missing.value) == (
            "acme/kernels has no results on branch 'mian'; its branches: dev, main, release; "
            "and 2 pull request branches (pull/<number>)"
        )
        assert missing.value.extra == {"branches": ["dev", "main", "release"]}
        monkeypatch.setattr(queries, "BRANCH_LIST", 2)
        with pytest.raises(NotFound, match="its branches: dev, main and 1 more; and 2 pull"):
            queries.check_branch(session, repo.id, repo.name, "mian")


def test_a_repository_with_pull_requests_only_names_no_branch(
    factory: sessionmaker[Session], store: Store
) -> None:
    doc = document(commit="p7", branch="pull/7")
    doc["pull_request"] = {"number": 7, "base_ref": "main"}
    store(doc)
    with factory() as session:
        repo = queries.repository_named(session, "acme/kernels")
        with pytest.raises(NotFound, match=r"its branches: none; and 1 pull request branch \("):
            queries.check_branch(session, repo.id, repo.name, "main")


def test_jobs_are_answered_with_names_listed_newest_first_and_counted_where_they_wait(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="c0"))
    with factory() as session, session.begin():
        repo = queries.repository_named(session, "acme/kernels")
        made = {
            (sha, kind): queue.enqueue(session, repository_id=repo.id, sha=sha * 40,
                                       branch="main", label_sets=[{}], max_attempts=1,
                                       kind=kind)[0]
            for sha, kind in [("a", "run"), ("a", "confirm"), ("b", "run"), ("c", "run")]
        }  # fmt: skip
        made["c", "run"].state = "succeeded"
        runner = session.scalars(select(Runner)).one()  # the documents' h100-a
        made["b", "run"].state, made["b", "run"].runner_id = "running", runner.id
    ids = {key: job.id for key, job in made.items()}
    with factory() as session:
        jobs = queries.newest_jobs(session, 10)
        assert [j.id for j in jobs] == sorted(ids.values(), reverse=True)
        public = {j.id: j for j in queries.jobs_public(session, jobs)}
        assert (public[ids["b", "run"]].runner, public[ids["a", "run"]].runner) == ("h100-a", None)
        assert {j.repository for j in public.values()} == {"acme/kernels"}
        assert [j.id for j in queries.newest_jobs(session, 10, state="running")] == [
            ids["b", "run"]
        ]
        assert [j.id for j in queries.newest_jobs(session, 10, sha_prefix="aaaa")] == [
            ids["a", "confirm"],
            ids["a", "run"],
        ]
        assert queries.newest_jobs(session, 10, repository_id=repo.id + 1) == []
        assert len(queries.newest_jobs(session, 2)) == 2
        assert queries.queued_jobs(session, "run", "a" * 40) == 1
        assert queries.queued_jobs(session, "confirm", "a" * 40) == 1
        assert queries.queued_jobs(session, "run", "b" * 40) == 0  # running
        assert queries.queued_jobs(session, "run", "c" * 40) == 0  # done


def test_a_run_is_found_by_its_own_id_with_its_commit_and_repository(
    factory: sessionmaker[Session], store: Store
) -> None:
    pk = store(document(commit="c0", run_id="run-0001", medians={"a": 1.0, "b": 2.0}))
    with factory() as session:
        run, sha, repository = queries.run_named(session, "run-0001")
        assert (run.id, sha, repository) == (pk, sha_for("c0"), "acme/kernels")
        assert queries.run_named(session, "run-0002") is None
        assert queries.result_count(session, pk) == 2
        assert queries.result_count(session, pk + 1) == 0
        assert queries.get(session, Run, pk) is run
        assert queries.get(session, Repository, 10_000) is None


def test_runners_are_found_by_name_and_by_their_tokens_digest(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        session.add_all([Runner(name="zeta", token_hash="1" * 64), Runner(name="alpha")])
    with factory() as session:
        assert [r.name for r in queries.runners_by_name(session)] == ["alpha", "zeta"]
        assert queries.runner_by_token_hash(session, "1" * 64).name == "zeta"
        assert queries.runner_by_token_hash(session, "2" * 64) is None
        assert queries.runner_named(session, "alpha").token_hash is None
        assert queries.runner_named(session, "beta") is None


def test_the_ping_says_the_dialect_and_the_schemas_revision(
    engine: Engine, factory: sessionmaker[Session], tmp_path: Path
) -> None:
    assert queries.ping_engine(engine) == (engine.dialect.name, head_revision())
    with factory() as session:
        assert queries.ping(session) == engine.dialect.name
    bare = create_db_engine(f"sqlite:///{tmp_path / 'bare.db'}")
    try:
        assert queries.ping_engine(bare) == ("sqlite", None)
    finally:
        bare.dispose()
