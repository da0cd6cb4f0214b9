"""How much of each kernel's ncu capture a commit's metrics carry: GET .../metrics?ncu=none,
summary (the default) or all (service.evaluation.reads.commit_ncu), over HTTP on SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from service.evaluation.reads.commit_ncu import SUMMARY
from service.schemas.metrics import CommitMetrics
from tests.conftest import ADMIN_TOKEN
from tests.documents import example_document
from tests.live_server import LiveServer

# A value the runner sends that the summary leaves out (the commit page shows it).
OUTSIDE = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def kernels(body: dict) -> dict[tuple[str, str, str], dict]:
    return {
        (w["workload"], json.dumps(w["params"], sort_keys=True), k["kernel"]): k
        for w in body["workloads"]
        for k in w["kernels"]
    }


def without_ncu(body: dict) -> dict:
    out = json.loads(json.dumps(body))
    out.pop("ncu")
    for k in kernels(out).values():
        k.pop("ncu_metrics"), k.pop("ncu_findings")
    return out


def settle(client: httpx.Client, path: str) -> None:
    """Wait for the change points that follow a store: until then two reads may differ."""
    deadline = time.monotonic() + 20
    while client.get(path, params={"ncu": "none"}).json()["change_points_pending"]:
        assert time.monotonic() < deadline, "change points still pending after 20 s"
        time.sleep(0.05)


def test_each_ncu_value_carries_what_it_says(client: httpx.Client) -> None:
    doc = example_document()
    assert client.post("/api/v1/runs", json=doc).status_code == 201
    sent: dict[tuple[str, str, str], dict[str, Any]] = {
        (w["name"], json.dumps(w["params"], sort_keys=True), k["kernel"]): k
        for w in doc["workloads"]
        for k in (w["ncu"] or {}).get("kernels", [])
    }
    assert sent and any(OUTSIDE in k["metrics"] for k in sent.values())
    path = f"/api/v1/commits/{doc['commit']['sha']}/metrics"
    settle(client, path)
    answers = {
        level: client.get(path, params={"ncu": level}) for level in ("none", "summary", "all")
    }
    bodies = {level: a.json() for level, a in answers.items()}
    for level, body in bodies.items():
        assert answers[level].status_code == 200
        assert body["ncu"] == level
        CommitMetrics.model_validate(body)
    assert client.get(path).json() == bodies["summary"]  # the default
    # Everything but the captures is the same answer at every level.
    assert (
        without_ncu(bodies["none"]) == without_ncu(bodies["summary"]) == without_ncu(bodies["all"])
    )
    for key, capture in sent.items():
        every = kernels(bodies["all"])[key]
        assert every["ncu_metrics"] == capture["metrics"]
        assert every["ncu_findings"] == capture["findings"]
        summary = kernels(bodies["summary"])[key]
        wanted = [name for name in SUMMARY if name in capture["metrics"]]
        assert wanted and list(summary["ncu_metrics"]) == wanted
        assert summary["ncu_metrics"] == {name: capture["metrics"][name] for name in wanted}
        assert summary["ncu_findings"] == capture["findings"]
        nothing = kernels(bodies["none"])[key]
        assert (nothing["ncu_metrics"], nothing["ncu_findings"]) == ({}, [])
    assert (
        len(answers["none"].content) < len(answers["summary"].content) < len(answers["all"].content)
    )
    # The commit page reads every value whatever the API's default.
    assert f"<code>{OUTSIDE}</code>" in client.get(f"/commits/{doc['commit']['sha']}").text


def test_an_unknown_ncu_value_is_a_422_naming_it(client: httpx.Client) -> None:
    doc = example_document()
    assert client.post("/api/v1/runs", json=doc).status_code == 201
    answer = client.get(f"/api/v1/commits/{doc['commit']['sha']}/metrics", params={"ncu": "most"})
    assert answer.status_code == 422
    assert "query.ncu" in answer.json()["detail"]
    assert "summary" in answer.json()["detail"]
