"""A workload whose timing method changes starts a new series, says so, and is never compared
with the old one (CUDA events and CUPTI differ by the launch overhead, several microseconds)."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, i: int, median: float, method: str) -> None:
    line = [f"c{j}" for j in range(i - 1, -1, -1)]
    doc = document(commit=f"c{i}", parents=line[:1], ancestors=line, minutes=i,
                   medians={"k": median}, seed=i)  # fmt: skip
    doc["workloads"][0]["timing"]["method"] = method
    assert client.post("/api/v1/runs", json=doc).status_code == 201


def kernel_metric(client: httpx.Client, i: int) -> dict:
    body = client.get(f"/api/v1/commits/{sha_for(f'c{i}')}/metrics").json()
    return body["workloads"][0]["kernels"][0]["metrics"][0]


def test_a_new_method_is_a_new_series_never_a_comparison(client: httpx.Client) -> None:
    for i in range(5):
        post(client, i, 20.0, "cuda_events")
    post(client, 5, 16.5, "cupti")  # the same kernel, without the events' launch overhead
    post(client, 6, 16.5, "cupti")
    switched = kernel_metric(client, 5)
    assert switched["method"] == "cupti"
    assert switched["verdict"] == "new", switched["analysis"]
    assert switched["change"] is None and switched["baseline"] is None
    note = switched["analysis"]["note"]
    assert "timing method changed from cuda_events to cupti" in note
    assert "never compared" in note
    old = kernel_metric(client, 4)
    assert old["series_id"] != switched["series_id"]
    assert kernel_metric(client, 6)["verdict"] == "unchanged"
    # Two series now: the series API names them apart by method.
    query = {"repository": "acme/kernels", "workload": "gemm_fwd", "kernel": "k"}
    both = client.get("/api/v1/series", params=query)
    assert both.status_code == 400
    assert {c["method"] for c in both.json()["candidates"]} == {"cuda_events", "cupti"}
    cupti = client.get("/api/v1/series", params={**query, "method": "cupti"}).json()
    assert cupti["series"]["id"] == switched["series_id"]
    assert [p["commit"] for p in cupti["points"]] == [sha_for("c5"), sha_for("c6")]
    # The trend page draws both, each line saying its method.
    page = client.get("/trends.json", params={"repository": "acme/kernels"}).json()
    assert {s["series"]["method"] for s in page["series"]} == {"cuda_events", "cupti"}
