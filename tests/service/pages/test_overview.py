"""The overview page (service.pages.overview) and its twin /index.json, through a real server on
SQLite and PostgreSQL: the recent runs with their verdicts, the active alerts, the runners and
the queue with its counts and jobs; the verdict history drawn oldest run left, one column per
run, two runs of one commit kept apart (a category axis would merge them); and the page with
the repository, the newest commit and a link to its twin."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tests.dashboards.test_pages import figure
from tests.documents import document, sha_for
from tests.live_server import LiveServer


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def test_runs_alerts_runners_and_the_queue(client: httpx.Client) -> None:
    # A young level's slowdown: pending, an alert suspected and a confirmation job queued.
    first = document(commit="c0", medians={"k": 100.0})
    slower = document(commit="c1", parents=["c0"], ancestors=["c0"], minutes=1,
                      medians={"k": 150.0})  # fmt: skip
    for doc in (first, slower):
        assert client.post("/api/v1/runs", json=doc).status_code == 201
    data = client.get("/index.json").json()
    assert [(r["sha"], r["verdicts"]) for r in data["recent_runs"]] == [
        (sha_for("c1"), {"pending": 1}), (sha_for("c0"), {"new": 1})]  # fmt: skip
    (alert,) = data["alerts"]
    assert (alert["state"], alert["commit"]) == ("suspected", sha_for("c1"))
    assert [r["name"] for r in data["runners"]] == ["h100-a"]
    assert data["queue"]["counts"] == {"queued": 1}
    (job,) = data["queue"]["jobs"]
    assert (job["kind"], job["commit"]) == ("confirm", sha_for("c1"))
    page = client.get("/")
    assert page.status_code == 200 and "<title>Overview · kernelwatch</title>" in page.text
    assert "acme/kernels" in page.text and sha_for("c1")[:10] in page.text
    assert 'href="/index.json"' in page.text


def test_two_runs_of_one_commit_are_two_columns_oldest_left(client: httpx.Client) -> None:
    for run_id in ("first-run-of-c0", "again-run-of-c0"):
        doc = document(commit="c0", run_id=run_id)
        assert client.post("/api/v1/runs", json=doc).status_code == 201
    later = document(commit="c1", parents=["c0"], ancestors=["c0"], minutes=1)
    assert client.post("/api/v1/runs", json=later).status_code == 201
    verdicts = figure(client.get("/").text, "verdicts")
    (columns,) = {tuple(t["x"]) for t in verdicts["data"]}
    c0, c1 = sha_for("c0")[:7], sha_for("c1")[:7]
    assert columns == (c0, f"{c0}·", c1)
