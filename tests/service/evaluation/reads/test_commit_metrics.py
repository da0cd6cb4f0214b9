"""Everything stored at one commit (service.evaluation.reads.commit_metrics): the runs it reads
(the newest per suite and fingerprint on the branch asked for, else on the newest run's branch);
a work verdict as the answer shows it (its label from the runner, else kernelwatch's words; a
note only for a changed counter, and for one still learning, how many pairs of runs it has of
MIN_PAIRS); and through a real server on SQLite and PostgreSQL, the answer's measures, each said
in words, and the series a run did not measure listed apart."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.analysis.work import MIN_PAIRS
from service.evaluation.reads.commit_metrics import (
    commit_metrics_data,
    latest_runs,
    learning_note,
    work_public,
)
from service.models import Commit
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

INSTRUCTIONS = "smsp__inst_executed.sum"


def test_a_changed_counter_is_noted_by_its_label_or_kernelwatchs_words() -> None:
    said = work_public(INSTRUCTIONS, "", 1.1e6, 1e6, 0.1, "changed", 0.001, 4)
    assert (said["label"], said["note"]) == (
        "instructions executed",
        "instructions executed +10.0%",
    )
    own = work_public(INSTRUCTIONS, "warp instructions", 1e6, 1e6, 0.0, "same", 0.001, 4)
    assert (own["label"], own["note"]) == ("warp instructions", "")


def test_a_counter_still_learning_says_how_many_pairs_it_has() -> None:
    said = work_public(INSTRUCTIONS, "", 1e6, 1e6, 0.0, "learning", None, 1)
    assert said["note"] == learning_note(1)
    assert said["note"].startswith(
        f"not yet shown steady on this kernel: 1 of {MIN_PAIRS} pairs of runs that profiled its "
        "unchanged code anew; shown, no notice."
    )


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, run_id: str, **kw: Any) -> None:
    doc = document(commit="c0", run_id=run_id, **kw)
    assert client.post("/api/v1/runs", json=doc).status_code == 201


def test_the_newest_run_per_suite_and_fingerprint_on_the_branch_is_read(
    client: httpx.Client, engine: Engine
) -> None:
    post(client, "main-aa-old")
    post(client, "main-aa-new")
    post(client, "main-bb-one", fingerprint="00000000000000bb")
    post(client, "release-only", branch="release")
    with Session(engine) as session:
        commit = session.scalars(select(Commit).where(Commit.sha == sha_for("c0"))).one()
        on_main = {r.run_uuid for r in latest_runs(session, commit, "main")}
        assert on_main == {"main-aa-new", "main-bb-one"}
        # No branch asked for: the newest run's branch, not a mixture of branches.
        assert [r.run_uuid for r in latest_runs(session, commit, None)] == ["release-only"]


def test_measures_are_said_in_words_and_unmeasured_series_listed_apart(
    client: httpx.Client, engine: Engine
) -> None:
    first = document(commit="c0", medians={"kept": 100.0, "dropped": 100.0})
    for process in first["workloads"][0]["timing"]["processes"]:
        process["peak_memory_bytes"] = 1_000_000_000
    assert client.post("/api/v1/runs", json=first).status_code == 201
    second = document(commit="c1", parents=["c0"], ancestors=["c0"], minutes=1,
                      medians={"kept": 100.0})  # fmt: skip
    for process in second["workloads"][0]["timing"]["processes"]:
        process["peak_memory_bytes"] = 1_500_000_000
    assert client.post("/api/v1/runs", json=second).status_code == 201
    with Session(engine) as session:
        commit = session.scalars(select(Commit).where(Commit.sha == sha_for("c1"))).one()
        data = commit_metrics_data(session, commit, "acme/kernels", "main", ncu="none")
    assert (data["branch"], data["ncu"], data["analysis_pending"]) == ("main", "none", False)
    said = {m["measure"]: m for m in data["workloads"][0]["measures"]}
    assert said["numeric_error"]["verdict"] == "unchanged"  # the correctness check's, beside it
    peak = said["peak_memory_bytes"]
    assert (peak["measure"], peak["verdict"], peak["unit"]) == (
        "peak_memory_bytes",
        "regressed",
        "B",
    )
    assert peak["said"] == "peak memory 1 GB → 1.5 GB (+50%), regressed"
    (absent,) = data["absent"]
    assert (absent["kernel"], absent["verdict"]) == ("dropped", "missing")
    assert data["verdict_counts"] == {"unchanged": 1, "missing": 1}
