"""The baseline shown beside each result of a commit (service.evaluation.reads.commit_baselines),
on runs stored through a real server on SQLite and PostgreSQL: a judged result's is the newest
result at its verdict's nearest baseline commit; one whose analysis is pending takes the nearest
earlier result along its commit's first-parent ancestry, where the runner sent one, and the
nearest earlier by commit time otherwise (a commit of another line committed in between is then
what it gets)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.evaluation.reads.commit_baselines import baselines_at
from service.models import Commit, Run
from service.store.reads import commit_reads as reads
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

# (label, its first-parent ancestors nearest first, minutes, median): `side` is a commit of
# another line, committed between c1 and head; `lone` came without its ancestry.
LINE = [
    ("c0", [], 0, 100.0),
    ("c1", ["c0"], 1, 101.0),
    ("side", ["c0"], 2, 150.0),
    ("head", ["c1", "c0"], 3, 102.0),
    ("lone", [], 4, 103.0),
]


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


@pytest.fixture
def stored(client: httpx.Client) -> None:
    for label, line, minutes, median in LINE:
        doc = document(commit=label, parents=line[:1], ancestors=line, minutes=minutes,
                       medians={"k": median}, run_id=f"run-of-{label}")  # fmt: skip
        assert client.post("/api/v1/runs", json=doc).status_code == 201


def baseline_of(engine: Engine, label: str, judged: bool) -> Any:
    """The baseline point of `label`'s one result, read as judged or as pending analysis."""
    with Session(engine) as session:
        commit = session.scalars(select(Commit).where(Commit.sha == sha_for(label))).one()
        run_ids = list(session.scalars(select(Run.id).where(Run.commit_id == commit.id)))
        (result,) = reads.results(session, run_ids)
        by_result = {v.result_id: v for v in reads.verdicts(session, run_ids)} if judged else {}
        return baselines_at(session, [result], "main", commit, by_result).get(result.id)


@pytest.mark.usefixtures("stored")
def test_pending_analysis_reads_the_nearest_ancestor_else_the_nearest_in_time(
    engine: Engine,
) -> None:
    along = baseline_of(engine, "head", judged=False)
    assert (along.sha, along.median, along.run_uuid) == (
        sha_for("c1"),
        pytest.approx(101.0, rel=0.01),
        "run-of-c1",
    )
    by_time = baseline_of(engine, "lone", judged=False)
    assert (by_time.sha, by_time.run_uuid) == (sha_for("head"), "run-of-head")
    assert baseline_of(engine, "c0", judged=False) is None


@pytest.mark.usefixtures("stored")
def test_a_judged_result_shows_the_newest_result_at_its_verdicts_nearest_commit(
    client: httpx.Client, engine: Engine
) -> None:
    judged = baseline_of(engine, "head", judged=True)
    assert (judged.sha, judged.run_uuid) == (sha_for("c1"), "run-of-c1")
    assert judged.committed_at == baseline_of(engine, "head", judged=False).committed_at
    # c1 measured again: the newer run is the one the verdict's baseline commit stands for.
    again = document(commit="c1", parents=["c0"], ancestors=["c0"], minutes=1,
                     medians={"k": 101.5}, run_id="run-of-c1-again")  # fmt: skip
    assert client.post("/api/v1/runs", json=again).status_code == 201
    judged = baseline_of(engine, "head", judged=True)
    assert (judged.run_uuid, judged.median) == ("run-of-c1-again", pytest.approx(101.5, rel=0.01))
