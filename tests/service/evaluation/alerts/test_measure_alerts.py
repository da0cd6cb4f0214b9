"""Alerts of a workload's measures beside its duration (service.evaluation.alerts.measure_alerts),
through a real server on SQLite and PostgreSQL, on peak memory: a regressed measure opens an
alert at once (no confirmation job), its attribution holding the measure, both values and the
rule's tolerance, on a series of its own; a pull request's run opens none; and a run analysed
again (an ancestor arrived late) dismisses the alert it opened where its measure no longer
regressed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.models import Alert, Result
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

STEADY, GROWN = 1.0e9, 1.5e9


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, label: str, line: list[str], peak: float, **kw: Any) -> None:
    """`label`'s run (`line`: its first-parent ancestors, nearest first) holding `peak` bytes."""
    doc = document(commit=label, parents=line[:1], ancestors=line, minutes=len(line),
                   medians={"tmatmul": 250.0}, seed=len(line), **kw)  # fmt: skip
    for process in doc["workloads"][0]["timing"]["processes"]:
        process["peak_memory_bytes"] = int(peak)
    if kw.get("branch", "main") != "main":
        doc["pull_request"] = {"number": 7, "base_ref": "main", "merge_base": sha_for(line[0])}
    answer = client.post("/api/v1/runs", json=doc)
    assert answer.status_code == 201, answer.text


def steady_line(client: httpx.Client, runs: int = 3) -> list[str]:
    """c0 .. c{runs-1} at the steady peak; their labels, nearest first."""
    line: list[str] = []
    for i in range(runs):
        post(client, f"c{i}", line, STEADY)
        line.insert(0, f"c{i}")
    return line


def test_a_regressed_measure_opens_an_alert_at_once_on_a_series_of_its_own(
    client: httpx.Client, engine: Engine
) -> None:
    line = steady_line(client)
    post(client, "grown", line, GROWN)
    (alert,) = client.get("/api/v1/alerts").json()
    assert (alert["state"], alert["commit"], alert["confirm_job_id"]) == (
        "open", sha_for("grown"), None)  # fmt: skip
    assert alert["base_commit"] == sha_for(line[0])
    attribution = {k: v for k, v in alert["attribution"].items() if k != "summary"}
    assert attribution == {"measure": "peak_memory_bytes", "base": STEADY, "head": GROWN,
                           "tolerance": pytest.approx(0.01)}  # fmt: skip
    (event,) = client.get(f"/api/v1/alerts/{alert['id']}").json()["events"]
    assert (event["to_state"], event["actor"]) == ("open", "kernelwatch")
    assert event["note"].endswith(
        ": beyond its rule's tolerance of 1%; a measure needs no interleaved confirmation"
    )
    assert alert["series"]["metric"] == "peak_memory_bytes"
    with Session(engine) as session:
        # The measure's series holds no results: no trend or comparison offers it.
        held = select(Result).where(Result.series_id == alert["series"]["id"])
        assert session.scalars(held).all() == []


def test_a_pull_requests_run_opens_no_measure_alert(client: httpx.Client) -> None:
    line = steady_line(client)
    post(client, "pr", line, GROWN, branch="pull/7")
    metrics = client.get(f"/api/v1/commits/{sha_for('pr')}/metrics").json()
    (peak,) = [
        m for m in metrics["workloads"][0]["measures"] if m["measure"] == "peak_memory_bytes"
    ]
    assert peak["verdict"] == "regressed"  # judged as on the branch, but opens nothing
    assert client.get("/api/v1/alerts", params={"state": "all"}).json() == []


def test_a_late_ancestor_takes_the_alert_its_descendant_no_longer_earns(
    client: httpx.Client, engine: Engine
) -> None:
    line = steady_line(client)
    # c4 names c3 as its parent before c3 arrives: it is compared with c2, and regressed.
    post(client, "c4", ["c3", *line], GROWN)
    with Session(engine) as session:
        (opened,) = session.scalars(select(Alert)).all()
        assert opened.state == "open"
    post(client, "c3", line, GROWN)  # late: c4 is judged again, against c3's peak
    (dismissed,) = client.get("/api/v1/alerts", params={"state": "dismissed"}).json()
    assert dismissed["id"] == opened.id and dismissed["commit"] == sha_for("c4")
    detail = client.get(f"/api/v1/alerts/{opened.id}").json()
    assert detail["events"][-1]["note"] == "analysed again: no longer a regression (unchanged)"
    # and the late commit, which came first, holds the regression's alert now
    (alert,) = client.get("/api/v1/alerts", params={"state": "open"}).json()
    assert (alert["commit"], alert["series"]["metric"]) == (sha_for("c3"), "peak_memory_bytes")
