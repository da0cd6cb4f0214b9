"""Impossible ancestry and numbers that stop being numbers are refused over HTTP with 422, the
field named, and nothing stored, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import httpx
import pytest
from sqlalchemy import Engine, func, select

from service.models import Commit, Result, Run
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def counts(engine: Engine) -> tuple[int, int, int]:
    with engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (Run, Commit, Result)
        )


def refused(client: httpx.Client, doc: dict, *words: str) -> str:
    answer = client.post("/api/v1/runs", json=doc)
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    for word in words:
        assert word in detail, detail
    return detail


def test_a_commit_that_is_its_own_parent_or_ancestor_is_refused(
    client: httpx.Client, engine: Engine
) -> None:
    before = counts(engine)
    own = sha_for("x")
    refused(client, document(commit="x", parents=["x"]), "commit.parents", "its own parent")
    refused(
        client,
        document(commit="x", parents=["p"], ancestors=["p", "x"]),
        "commit.ancestors",
        "ancestors[1] is the commit itself",
    )
    refused(
        client,
        document(commit="x", parents=["p"], ancestors=["p", "q", "p"]),
        "ancestors[2] repeats ancestors[0]",
        "cycle",
    )
    refused(
        client,
        document(commit="x", parents=["p"], ancestors=["q", "p"]),
        "ancestors[0]",
        "must be the first parent",
    )
    assert counts(engine) == before
    assert client.get(f"/api/v1/commits/{own}/metrics").status_code == 404


def test_a_cycle_across_documents_and_a_rewritten_line_are_refused(
    client: httpx.Client, engine: Engine
) -> None:
    line = ["c2", "c1", "c0"]
    first = document(commit="c3", parents=["c2"], ancestors=line)
    assert client.post("/api/v1/runs", json=first).status_code == 201
    stored = counts(engine)
    # c2 arrives late, claiming c3 (stored with c2 as its ancestor) as its own ancestor.
    late = document(commit="c2", parents=["c3"], ancestors=["c3", "c1", "c0"])
    refused(client, late, "commit.ancestors[0]", "cycle")
    # A descendant whose line disagrees with the line stored for its nearest ancestor.
    rewritten = document(commit="c4", parents=["c3"], ancestors=["c3", "other", "c0"])
    refused(client, rewritten, "commit.ancestors[1]", "never changes")
    # The same commit again, with another line.
    again = document(commit="c3", parents=["c2"], ancestors=["c2", "zz", "c0"])
    refused(client, again, "commit.ancestors[1]", "the line stored for commit")
    assert counts(engine) == stored
    # A truncated copy of the same line is the same history.
    shorter = document(commit="c3", parents=["c2"], ancestors=["c2"], seed=4)
    assert client.post("/api/v1/runs", json=shorter).status_code == 201


def test_numbers_that_overflow_in_microseconds_are_refused(
    client: httpx.Client, engine: Engine
) -> None:
    before = counts(engine)
    doc = document(commit="x")
    doc["workloads"][0]["timing"]["unit"] = "s"
    doc["workloads"][0]["timing"]["processes"][0]["samples"][3] = 1e305
    refused(client, doc, "workloads[0].timing.processes", "overflows to infinity")
    doc = document(commit="x")
    timing = doc["workloads"][0]["timing"]
    timing["unit"] = "s"
    for p in timing["processes"]:
        p["samples"] = [1.5e302] * len(p["samples"])
    refused(client, doc, "workloads[0].timing", "overflow")
    for bad in (-3.0, 0.0):
        doc = document(commit="x")
        doc["workloads"][0]["timing"]["processes"][1]["samples"][0] = bad
        refused(client, doc, "workloads[0].timing.processes[1].samples[0]", "greater than 0")
    doc = document(commit="x")
    metric = {"dram__bytes_read.sum": {"value": 1.0, "unit": "byte"}}
    doc["workloads"][0]["ncu"] = {"status": "ok", "kernels": [{"kernel": "k", "metrics": metric}]}
    text = json.dumps(doc).replace('"value": 1.0', '"value": NaN')
    answer = client.post(
        "/api/v1/runs", content=text.encode(), headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 422
    where = "workloads[0].ncu.kernels[0].metrics.dram__bytes_read.sum.value"
    assert where in answer.json()["detail"]
    assert counts(engine) == before
