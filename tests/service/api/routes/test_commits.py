"""The commit routes (service.api.routes.commits) over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from service.evaluation.reads.commit_ncu import SUMMARY
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, example_document, sha_for
from tests.live_server import LiveServer

A, B, Z = sha_for("a"), sha_for("b"), sha_for("z")


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, doc: dict) -> None:
    answer = client.post("/api/v1/runs", json=doc)
    assert answer.status_code == 201, answer.text


def measure(client: httpx.Client) -> None:
    """a (12:00) on main and then on feature, b (12:10) after a on main at +10%, and z (12:05)
    in acme/other."""
    post(client, document(commit="a", minutes=0, medians={"k": 100.0}))
    post(client, document(commit="a", minutes=0, branch="feature", medians={"k": 100.0}))
    post(client, document(commit="b", parents=["a"], ancestors=["a"], minutes=10,
                          medians={"k": 110.0}))  # fmt: skip
    post(client, document(commit="z", minutes=5, repository="acme/other", medians={"k": 1.0}))


def shas(client: httpx.Client, **query: object) -> list[str]:
    answer = client.get("/api/v1/commits", params=query)
    assert answer.status_code == 200, answer.text
    return [c["sha"] for c in answer.json()]


def metric(metrics: dict) -> dict:
    (workload,) = metrics["workloads"]
    (kernel,) = workload["kernels"]
    return kernel["metrics"][0]


def test_commits_are_listed_newest_committed_first_with_runs_and_branches(
    client: httpx.Client,
) -> None:
    measure(client)
    listed = client.get("/api/v1/commits").json()
    assert [c["sha"] for c in listed] == [B, Z, A]
    assert listed[-1] == {
        "sha": A,
        "repository": "acme/kernels",
        "subject": "commit a",
        "author_name": "Ada Lovelace",
        "committed_at": "2026-11-01T12:00:00Z",
        "runs": 2,
        "branches": ["feature", "main"],
    }
    assert (listed[1]["repository"], listed[1]["runs"]) == ("acme/other", 1)


def test_the_list_filters_by_repository_branch_and_limit(client: httpx.Client) -> None:
    measure(client)
    assert shas(client, repository="acme/kernels") == [B, A]
    assert shas(client, repository="acme/other") == [Z]
    assert shas(client, branch="feature") == [A]
    assert shas(client, repository="acme/kernels", branch="main") == [B, A]
    # A branch nothing was measured on lists nothing; the commit's metrics 404 on it instead.
    assert shas(client, branch="nosuch") == []
    assert shas(client, limit=1) == [B]
    feature = client.get("/api/v1/commits", params={"branch": "feature"}).json()
    assert feature[0]["runs"] == 1 and feature[0]["branches"] == ["feature"]
    for query, status, says in [
        ({"repository": "acme/none"}, 404, "no repository 'acme/none'"),
        ({"limit": 0}, 422, "query.limit"),
        ({"limit": 1001}, 422, "query.limit"),
        ({"limit": "ten"}, 422, "query.limit"),
        ({"sha": A}, 400, "unknown query parameter 'sha'"),
    ]:
        answer = client.get("/api/v1/commits", params=query)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["detail"], query


def test_a_commits_metrics_carry_each_kernels_change_against_its_baseline(
    client: httpx.Client,
) -> None:
    measure(client)
    answer = client.get(f"/api/v1/commits/{B}/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    metrics = answer.json()
    assert metrics["commit"]["sha"] == B and metrics["commit"]["parents"] == [A]
    assert metrics["commit"]["repository"] == "acme/kernels"
    assert (metrics["branch"], [r["branch"] for r in metrics["runs"]]) == ("main", ["main"])
    assert metrics["ncu"] == "summary"  # the default
    b = metric(metrics)
    assert (b["metric"], b["unit"]) == ("duration", "us")
    assert b["statistics"]["median"] == pytest.approx(110.0, rel=0.01)
    assert b["baseline"]["commit"] == A
    assert b["change"] == pytest.approx(0.10, abs=0.01)
    a = metric(client.get(f"/api/v1/commits/{A}/metrics", params={"branch": "main"}).json())
    assert (a["verdict"], a["baseline"], a["change"]) == ("new", None, None)


def test_a_short_sha_the_repository_and_the_branch_choose_what_is_answered(
    client: httpx.Client,
) -> None:
    measure(client)
    # Four digits, in either case, name the commit where one commit has them.
    short = client.get(f"/api/v1/commits/{B[:4].upper()}/metrics").json()
    assert short["commit"]["sha"] == B
    # The newest run's branch by default; the one asked for where given.
    default = client.get(f"/api/v1/commits/{A}/metrics").json()
    assert (default["branch"], [r["branch"] for r in default["runs"]]) == ("feature", ["feature"])
    main = client.get(f"/api/v1/commits/{A}/metrics", params={"branch": "main"}).json()
    assert (main["branch"], [r["branch"] for r in main["runs"]]) == ("main", ["main"])
    there = client.get(f"/api/v1/commits/{A}/metrics", params={"repository": "acme/kernels"})
    assert there.status_code == 200 and there.json()["commit"]["sha"] == A
    elsewhere = client.get(f"/api/v1/commits/{A}/metrics", params={"repository": "acme/other"})
    assert elsewhere.status_code == 404
    assert elsewhere.json()["detail"] == f"no commit {A} in acme/other has results yet"
    nosuch = client.get(f"/api/v1/commits/{A}/metrics", params={"branch": "nosuch"})
    assert nosuch.status_code == 404
    assert nosuch.json()["branches"] == ["feature", "main"]


def test_the_ncu_parameter_says_how_much_of_each_capture_is_answered(
    client: httpx.Client,
) -> None:
    doc = example_document()
    post(client, doc)
    url = f"/api/v1/commits/{doc['commit']['sha']}/metrics"

    def captured(ncu: str) -> dict[str, tuple[set[str], int]]:
        body = client.get(url, params={"ncu": ncu}).json()
        assert body["ncu"] == ncu
        # The smoke workload's gemm_bias_act_fwd: a kernel whose capture holds every value.
        (smoke,) = [w for w in body["workloads"] if w["params"].get("m") == 32]
        return {
            k["kernel"]: (set(k["ncu_metrics"]), len(k["ncu_findings"])) for k in smoke["kernels"]
        }

    summary, every, none = captured("summary"), captured("all"), captured("none")
    names, findings = summary["gemm_bias_act_fwd"]
    assert names and names <= set(SUMMARY) and findings == 5
    assert every["gemm_bias_act_fwd"][0] > names and every["gemm_bias_act_fwd"][1] == 5
    assert none == {"gemm_bias_act_fwd": (set(), 0)}
    bad = client.get(url, params={"ncu": "some"})
    assert bad.status_code == 422 and "query.ncu" in bad.json()["detail"]


def test_a_sha_that_names_no_commit_or_cannot_name_one(client: httpx.Client) -> None:
    for sha in ("abcd" + "1" * 36, "abcd" + "2" * 36):
        post(client, document(commit=sha))
    for path, query, status, says in [
        (f"/api/v1/commits/{'0' * 40}/metrics", {}, 404, f"no commit {'0' * 40} has results"),
        ("/api/v1/commits/abc/metrics", {}, 422, "path.sha"),
        (f"/api/v1/commits/{'0' * 41}/metrics", {}, 422, "path.sha"),
        ("/api/v1/commits/head/metrics", {}, 422, "path.sha"),
        ("/api/v1/commits/abcd/metrics", {}, 400, "abcd is ambiguous: it matches 2 commits"),
        (f"/api/v1/commits/{'0' * 40}/metrics", {"limit": 1}, 400, "unknown query parameter"),
    ]:
        answer = client.get(path, params=query)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["detail"], path
    ambiguous = client.get("/api/v1/commits/abcd/metrics").json()
    assert sorted(c["sha"] for c in ambiguous["candidates"]) == [
        "abcd" + "1" * 36,
        "abcd" + "2" * 36,
    ]
