"""The series routes (service.api.routes.series) over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer
from tests.service.evaluation.reads.test_work_history import INSTRUCTIONS, capture

PARAMS = {"m": 1024, "n": 1024, "k": 1024, "act": "k"}
NAMED = {"repository": "acme/kernels", "workload": "gemm_fwd", "kernel": "k", "metric": "duration"}


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def measure(client: httpx.Client) -> int:
    """k at 100, 110 and 120 us on main (a, b, c), with k2 beside it, then at 90 on `feature`
    (f, the newest); each k with an ncu capture executing 1e6 more instructions than the one
    before. The id of k's series."""
    line: list[str] = []
    for i, (label, median) in enumerate([("a", 100.0), ("b", 110.0), ("c", 120.0)]):
        doc = document(commit=label, parents=line[:1], ancestors=line, minutes=10 * i,
                       medians={"k": median, "k2": 50.0}, seed=i)  # fmt: skip
        captured = [capture("k", 1e6 * (i + 1)), capture("helper", 1e5)]
        doc["workloads"][0]["ncu"] = {"status": "ok", "kernels": captured}
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        line.insert(0, label)
    feature = document(commit="f", minutes=40, branch="feature", medians={"k": 90.0})
    assert client.post("/api/v1/runs", json=feature).status_code == 201
    return client.get("/api/v1/series", params=NAMED).json()["series"]["id"]


def series(client: httpx.Client, **query: object) -> dict:
    answer = client.get("/api/v1/series", params=query)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_series_history_is_its_points_on_a_branch_oldest_first(client: httpx.Client) -> None:
    series_id = measure(client)
    history = series(client, id=series_id, branch="main")
    assert history["series"] == {
        "id": series_id, "repository": "acme/kernels", "suite": "kernels", "workload": "gemm_fwd",
        "params": PARAMS, "kernel": "k", "metric": "duration", "unit": "us",
        "method": "cuda_events", "fingerprint": "00000000000000aa",
    }  # fmt: skip
    points = history["points"]
    assert history["branch"] == "main"
    assert [p["commit"] for p in points] == [sha_for(x) for x in "abc"]
    assert [p["subject"] for p in points] == ["commit a", "commit b", "commit c"]
    medians = [p["statistics"]["median"] for p in points]
    assert medians == pytest.approx([100.0, 110.0, 120.0], rel=0.01)
    assert points[0]["verdict"] == "new" and points[1]["verdict"] == "regressed"
    assert {p["samples"] is None for p in points} == {True}
    sampled = series(client, id=series_id, branch="main", samples="true")["points"]
    assert [len(p["samples"]) for p in sampled] == [60, 60, 60]  # 3 processes of 20
    last = series(client, id=series_id, branch="main", limit=2)["points"]
    assert [p["commit"] for p in last] == [sha_for("b"), sha_for("c")]
    # Without a branch: the newest result's.
    newest = series(client, id=series_id)
    assert (newest["branch"], [p["commit"] for p in newest["points"]]) == (
        "feature",
        [sha_for("f")],
    )


def test_a_series_is_found_by_its_names_and_parameters(client: httpx.Client) -> None:
    series_id = measure(client)
    k = json.dumps(PARAMS)
    for query in [
        NAMED,
        {"kernel": "k"},
        {"kernel": "k", "suite": "kernels", "fingerprint": "00000000000000aa"},
        {"kernel": "k", "method": "cuda_events"},
        {"workload": "gemm_fwd", "workload_params": k},
        {"workload": "gemm_fwd", "params": k},  # the parameter's older name
        {"workload": "gemm_fwd", "params": k, "workload_params": k},
        {"kernel": "k", "workload_params": ""},  # empty: parameters of any value
    ]:
        assert series(client, **query)["series"]["id"] == series_id, query
    several = client.get("/api/v1/series", params={"workload": "gemm_fwd"})
    assert several.status_code == 400
    assert several.json()["detail"].startswith("2 series match; narrow the query")
    assert sorted(c["kernel"] for c in several.json()["candidates"]) == ["k", "k2"]


def test_a_query_that_names_no_series_or_cannot_name_one_is_refused(client: httpx.Client) -> None:
    series_id = measure(client)
    deep = "[" * 65 + "]" * 65
    for query, status, says in [
        ({}, 400, "name a series: id=, or repository=/workload=/kernel=/metric="),
        ({"kernel": "nope"}, 404, "no series matches that query"),
        ({"kernel": "k", "method": "host"}, 404, "no series matches that query"),
        ({"kernel": "k", "repository": "acme/other"}, 404, "no series matches that query"),
        ({"id": 99}, 404, "no series matches that query"),
        ({"kernel": "k", "params": "{}", "workload_params": '{"m":1}'}, 400, "give one"),
        ({"kernel": "k", "workload_params": "{"}, 400, "workload_params must be a JSON object:"),
        ({"kernel": "k", "workload_params": "[1]"}, 400, "must be a JSON object, e.g."),
        ({"kernel": "k", "workload_params": deep}, 422, "nests deeper than 64 levels"),
        ({"id": series_id, "branch": "nosuch"}, 404, "no results on branch 'nosuch'"),
        ({"id": 0}, 422, "query.id"),
        ({"id": 2**31}, 422, "query.id"),
        ({"id": series_id, "limit": 0}, 422, "query.limit"),
        ({"id": series_id, "limit": 10_001}, 422, "query.limit"),
        ({"id": series_id, "samples": "maybe"}, 422, "query.samples"),
        ({"id": series_id, "commit": "abcd"}, 400, "unknown query parameter 'commit'"),
    ]:
        answer = client.get("/api/v1/series", params=query)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["detail"], query
    nosuch = client.get("/api/v1/series", params={"id": series_id, "branch": "nosuch"})
    assert nosuch.json()["branches"] == ["feature", "main"]


def test_the_work_of_a_series_kernels_along_a_branch(client: httpx.Client) -> None:
    series_id = measure(client)
    answer = client.get("/api/v1/series/work", params={"id": series_id, "branch": "main"})
    assert answer.status_code == 200, answer.text
    work = answer.json()
    assert (work["series"]["id"], work["branch"]) == (series_id, "main")
    assert work["counters"][INSTRUCTIONS] == "warp instructions"
    kernels = {k["kernel"]: k["points"] for k in work["kernels"]}
    assert set(kernels) == {"k", "helper"}
    assert [p["commit"] for p in kernels["k"]] == [sha_for(x) for x in "abc"]
    assert [p["values"][INSTRUCTIONS] for p in kernels["k"]] == [1e6, 2e6, 3e6]
    query = {"id": series_id, "branch": "main", "kernel": "k", "limit": 1}
    one = client.get("/api/v1/series/work", params=query)
    (only,) = one.json()["kernels"]
    assert (only["kernel"], [p["commit"] for p in only["points"]]) == ("k", [sha_for("c")])
    # The newest result's branch by default: f was measured without a capture.
    newest = client.get("/api/v1/series/work", params={"id": series_id}).json()
    assert (newest["branch"], newest["kernels"]) == ("feature", [])
    for query, status, says in [
        ({}, 422, "query.id: Field required"),
        ({"id": 99}, 404, "no series matches that query"),
        ({"id": 0}, 422, "query.id"),
        ({"id": series_id, "branch": "nosuch"}, 404, "no results on branch 'nosuch'"),
        ({"id": series_id, "limit": 10_001}, 422, "query.limit"),
        ({"id": series_id, "metric": "duration"}, 400, "unknown query parameter 'metric'"),
    ]:
        answer = client.get("/api/v1/series/work", params=query)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["detail"], query
