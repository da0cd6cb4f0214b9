"""The work counters of a workload's kernels along a branch (service.evaluation.reads.
work_history, read through GET /api/v1/series/work on a real server, SQLite and PostgreSQL): per
kernel, the work counters of the runs of the series' last `limit` results, oldest first, each
point with its verdicts; values of no other ncu metric; the counters named by the runner's own
labels where its captures had them, else by kernelwatch's; and one kernel alone where asked."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from service.analysis.work import WORK_LABELS
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

INSTRUCTIONS, DRAM = "smsp__inst_executed.sum", "dram__bytes_read.sum"


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def capture(kernel: str, instructions: float) -> dict:
    metrics = {
        INSTRUCTIONS: {"value": instructions, "unit": "inst", "label": "warp instructions"},
        DRAM: {"value": 4.0e6, "unit": "byte"},
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": {"value": 40.0, "unit": "%"},
        "launch__grid_size": {"value": 132.0, "unit": ""},
    }
    digest = hashlib.sha256(kernel.encode()).hexdigest()
    return {"kernel": kernel, "metrics": metrics, "determinants": digest}


def history(client: httpx.Client, instructions: list[float]) -> int:
    """One commit per entry, its kernel `k` executing that many instructions beside a steady
    `helper`; the timing series' id."""
    line: list[str] = []
    for i, count in enumerate(instructions):
        doc = document(commit=f"c{i}", parents=line[:1], ancestors=line, minutes=i,
                       medians={"k": 100.0}, seed=i)  # fmt: skip
        captured = [capture("k", count), capture("helper", 1e5)]
        doc["workloads"][0]["ncu"] = {"status": "ok", "kernels": captured}
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        line.insert(0, f"c{i}")
    metrics = client.get(f"/api/v1/commits/{sha_for('c0')}/metrics").json()
    return metrics["workloads"][0]["kernels"][0]["metrics"][0]["series_id"]


def test_each_kernels_work_counters_oldest_first_with_their_verdicts(client: httpx.Client) -> None:
    series = history(client, [1e6, 1e6, 1e6, 1.2e6])
    answer = client.get("/api/v1/series/work", params={"id": series, "limit": 3})
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["branch"] == "main" and found["series"]["id"] == series
    assert found["counters"][INSTRUCTIONS] == "warp instructions"  # the runner's label
    assert found["counters"][DRAM] == WORK_LABELS[DRAM]
    kernels = {k["kernel"]: k["points"] for k in found["kernels"]}
    assert set(kernels) == {"k", "helper"}
    points = kernels["k"]
    assert [p["commit"] for p in points] == [sha_for(f"c{i}") for i in (1, 2, 3)]
    assert all(set(p["values"]) == {INSTRUCTIONS, DRAM} for p in points)
    assert [p["values"][INSTRUCTIONS] for p in points] == [1e6, 1e6, 1.2e6]
    judged = points[-1]["verdicts"][INSTRUCTIONS]
    assert judged["verdict"] == "changed" and judged["change"] == pytest.approx(0.2)


def test_one_kernel_alone_where_asked(client: httpx.Client) -> None:
    series = history(client, [1e6, 1e6])
    found = client.get("/api/v1/series/work", params={"id": series, "kernel": "helper"}).json()
    (only,) = found["kernels"]
    assert only["kernel"] == "helper" and len(only["points"]) == 2
