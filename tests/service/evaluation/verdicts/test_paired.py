"""What a confirmation and a bisection share (service.evaluation.verdicts.paired): a paired
document's samples of one series, in microseconds whatever unit the runner timed in, process by
process, found by the series' workload and parameters (none where that workload went untimed);
and a commit's sha, empty for a commit that is not known."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.evaluation.verdicts.paired import commit_sha, series_samples
from service.models import Commit, Series
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

GEMM = {"m": 1024, "n": 1024, "k": 1024}


def test_samples_are_in_microseconds_process_by_process() -> None:
    doc = document(commit="c", medians={"relu": 100.0, "gelu": 200.0})
    timing = doc["workloads"][1]["timing"]
    timing["unit"] = "ms"
    series = Series(workload="gemm_fwd", params={**GEMM, "act": "gelu"})
    found = series_samples(doc, series)
    assert found is not None and len(found) == len(timing["processes"])
    for got, sent in zip(found, timing["processes"], strict=True):
        np.testing.assert_allclose(got, np.asarray(sent["samples"]) * 1000.0)


def test_a_workload_of_other_parameters_or_without_timing_has_no_samples() -> None:
    doc = document(commit="c", medians={"relu": 100.0})
    assert series_samples(doc, Series(workload="gemm_fwd", params={**GEMM, "act": "gelu"})) is None
    doc["workloads"][0]["timing"] = None  # a workload that failed: nothing was timed
    assert series_samples(doc, Series(workload="gemm_fwd", params={**GEMM, "act": "relu"})) is None


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def test_a_commits_sha_is_empty_where_the_commit_is_unknown(
    client: httpx.Client, engine: Engine
) -> None:
    assert client.post("/api/v1/runs", json=document(commit="c0")).status_code == 201
    with Session(engine) as session:
        known = session.scalar(select(Commit.id).where(Commit.sha == sha_for("c0")))
        assert commit_sha(session, known) == sha_for("c0")
        assert commit_sha(session, None) == ""
        assert commit_sha(session, 10_000) == ""
