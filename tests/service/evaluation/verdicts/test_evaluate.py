"""Verdicts for every series of a stored run (service.evaluation.verdicts.evaluate), through a
real server on SQLite and PostgreSQL: a series with no baseline along its branch is new, and
says so, or says that its timing method changed and it is never compared with the other
method's series; a series the previous run measured and this one did not is broken where its
workload failed (or the build did) and missing otherwise; a pull request's run draws its
baseline from its merge base along the target branch, and none before the merge base is known;
and a run analysed again has its verdicts replaced, not added to."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from service.evaluation.verdicts.evaluate import baseline_line, evaluate_run
from service.models import Commit, Run, Series, Verdict
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

THREE = {"kept": 100.0, "failing": 100.0, "dropped": 100.0}


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, doc: dict[str, Any]) -> dict[str, Any]:
    answer = client.post("/api/v1/runs", json=doc)
    assert answer.status_code == 201, answer.text
    return client.get(f"/api/v1/commits/{doc['commit']['sha']}/metrics").json()


def verdicts(metrics: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """(verdict, note) by kernel of the commit's results."""
    return {k["kernel"]: (mp["verdict"], mp["analysis"]["note"]) for w in metrics["workloads"]
            for k in w["kernels"] for mp in k["metrics"]}  # fmt: skip


def test_a_series_without_a_baseline_is_new(client: httpx.Client) -> None:
    assert verdicts(post(client, document(commit="c0", medians=THREE))) == dict.fromkeys(
        THREE, ("new", "no baseline yet along this branch")
    )


def test_what_the_previous_run_measured_and_this_one_did_not_is_broken_or_missing(
    client: httpx.Client,
) -> None:
    post(client, document(commit="c0", medians=THREE))
    doc = document(commit="c1", parents=["c0"], ancestors=["c0"], minutes=1,
                   medians={"kept": 100.0, "failing": 100.0})  # fmt: skip
    doc["workloads"][1].update(status="failed", error="illegal memory access", timing=None)
    absent = {a["kernel"]: (a["verdict"], a["note"]) for a in post(client, doc)["absent"]}
    assert absent == {
        "failing": ("broken", "failed: illegal memory access"),
        "dropped": ("missing", "measured by the previous run, not by this one"),
    }
    broken = document(commit="c2", parents=["c1"], ancestors=["c1", "c0"], minutes=2)
    broken.update(status="build_failed", workloads=[])
    broken["build"].update(status="failed", log_tail="error: identifier undefined", kernels=[])
    absent = {a["kernel"]: (a["verdict"], a["note"]) for a in post(client, broken)["absent"]}
    # The previous run is the newest one that built: c1, which measured only "kept".
    assert absent == {"kept": ("broken", "the build failed")}


def test_a_workload_timed_another_way_starts_a_series_that_says_why(
    client: httpx.Client, engine: Engine
) -> None:
    post(client, document(commit="c0", medians={"k": 100.0}))
    doc = document(commit="c1", parents=["c0"], ancestors=["c0"], minutes=1, medians={"k": 104.0})
    doc["workloads"][0]["timing"]["method"] = "cupti"
    with Session(engine) as session:
        (events,) = session.scalars(select(Series.id)).all()
    assert verdicts(post(client, doc))["k"] == (
        "new",
        f"timing method changed from cuda_events to cupti: a new series starts here (the "
        f"cuda_events series is {events}); the two are never compared",
    )


def pull_request(merge_base: str | None) -> dict[str, Any]:
    doc = document(commit="pr", parents=["c1"], ancestors=["c1", "c0"], minutes=5,
                   branch="pull/7", medians={"k": 100.0})  # fmt: skip
    doc["pull_request"] = {"number": 7, "base_ref": "main", "merge_base": merge_base}
    return doc


def test_a_pull_requests_baseline_is_its_merge_base_along_the_target_branch(
    client: httpx.Client, engine: Engine
) -> None:
    for i, label in enumerate(("c0", "c1", "c2")):
        line = [f"c{j}" for j in range(i - 1, -1, -1)]
        post(client, document(commit=label, parents=line[:1], ancestors=line, minutes=i))
    post(client, pull_request(None))
    post(client, pull_request(sha_for("c1")))
    with Session(engine) as session:
        ids = dict(session.execute(select(Commit.sha, Commit.id)).all())
        head = session.get(Commit, ids[sha_for("pr")])
        unknown, known = session.scalars(
            select(Run).where(Run.branch == "pull/7").order_by(Run.id)
        ).all()
        assert baseline_line(session, unknown, head) == []
        # The merge base first, then its own line; never c2, which the pull request lacks.
        assert baseline_line(session, known, head) == [ids[sha_for("c1")], ids[sha_for("c0")]]


def test_a_run_analysed_again_has_its_verdicts_replaced(
    client: httpx.Client, engine: Engine
) -> None:
    post(client, document(commit="c0", medians=THREE))
    post(client, document(commit="c1", parents=["c0"], ancestors=["c0"], medians=THREE))
    with Session(engine) as session, session.begin():
        run = session.scalars(select(Run).order_by(Run.id.desc())).first()
        assert run is not None
        before = session.scalars(select(Verdict.verdict).where(Verdict.run_id == run.id)).all()
        again = evaluate_run(session, run)
        session.flush()
        count = select(func.count()).select_from(Verdict).where(Verdict.run_id == run.id)
        assert session.scalar(count) == len(again) == len(before) == 3
        assert sorted(v.verdict for v in again) == sorted(before)
