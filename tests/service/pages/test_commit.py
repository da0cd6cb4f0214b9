"""The commit page (service.pages.commit) and its twin /commits/{sha}.json, through a real server
on SQLite and PostgreSQL: a series the run did not run at all is "not measured", apart from the
table; a work counter that changed is a notice on its rows (named by kernel where the workload
has several), never a verdict; each run's details with its device's peak; and a
workload measured on two GPUs at one commit gets one kernel breakdown each, told apart by run."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tests.dashboards.conftest import rich_document
from tests.documents import document, sha_for
from tests.live_server import LiveServer
from tests.service.evaluation.reads.test_work_history import history


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def test_a_series_the_run_did_not_run_is_not_measured_apart_from_the_table(
    client: httpx.Client,
) -> None:
    first = document(commit="c0", medians={"kept": 100.0, "dropped": 100.0})
    second = document(commit="c1", parents=["c0"], ancestors=["c0"], minutes=1,
                      medians={"kept": 100.0})  # fmt: skip
    for doc in (first, second):
        assert client.post("/api/v1/runs", json=doc).status_code == 201
    data = client.get(f"/commits/{sha_for('c1')}.json").json()
    assert [(r["kernel"], r["verdict"]) for r in data["rows"]] == [("kept", "unchanged")]
    (absent,) = data["not_measured"]
    assert (absent["kernel"], absent["verdict"]) == ("dropped", "missing")
    page = client.get(f"/commits/{sha_for('c1')}", params={"branch": "main"})
    assert page.status_code == 200
    assert f"<title>Commit {sha_for('c1')[:10]} · kernelwatch</title>" in page.text
    assert f'href="/commits/{sha_for("c1")}.json?branch=main"' in page.text
    assert "Not measured in this run" in page.text


def test_a_changed_work_counter_is_a_notice_on_the_rows(client: httpx.Client) -> None:
    history(client, [1e6, 1e6, 1e6, 1.2e6])
    (row,) = client.get(f"/commits/{sha_for('c3')}.json").json()["rows"]
    # Two kernels captured in the workload (k and its helper): the notice says whose counter.
    assert row["work"] == ["k warp instructions +20.0%"]
    assert row["verdict"] == "unchanged"  # the timing's verdict, whatever the work did
    (quiet,) = client.get(f"/commits/{sha_for('c2')}.json").json()["rows"]
    assert quiet["work"] == []


def test_a_workload_measured_on_two_gpus_gets_a_breakdown_each(client: httpx.Client) -> None:
    docs = [rich_document("r0", index=0, history=[]) for _ in range(2)]
    docs[1]["environment"]["fingerprint"] = "00000000000000bb"
    for doc in docs:
        assert client.post("/api/v1/runs", json=doc).status_code == 201
    data = client.get(f"/commits/{sha_for('r0')}.json").json()
    assert {r["run_id"] for r in data["run_details"]} == {d["run_id"] for d in docs}
    for detail in data["run_details"]:
        assert detail["peak"]["source"] == "datasheet" and detail["peak"]["flops"]["fp32"] > 0
    (first, second) = [t for t in data["breakdown_titles"] if t.startswith("train_step")]
    assert second == f"{first} (run {docs[1]['run_id'][:8]})"
