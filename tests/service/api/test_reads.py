"""Commit metrics and series history over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import httpx
import pytest

from service.api.app import create_app
from service.core.settings import Settings
from service.schemas.metrics import CommitMetrics
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer


def post(client: httpx.Client, doc: dict) -> None:
    answer = client.post("/api/v1/runs", json=doc)
    assert answer.status_code == 201, answer.text


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def metric_of(metrics: dict, kernel: str) -> dict:
    for w in metrics["workloads"]:
        for k in w["kernels"]:
            if k["kernel"] == kernel and k["metrics"]:
                return k["metrics"][0]
    raise AssertionError(f"no metric for {kernel}")


def test_change_is_against_the_nearest_earlier_commit_on_the_branch(client: httpx.Client) -> None:
    post(client, document(commit="a", minutes=0, medians={"fast": 100.0, "slow": 50.0}))
    post(
        client,
        document(commit="b", parents=["a"], minutes=10, medians={"fast": 110.0, "slow": 50.0}),
    )
    # Later in time but on another branch: must not be anyone's baseline on main.
    post(
        client,
        document(commit="x", minutes=15, branch="feature", medians={"fast": 500.0, "slow": 500.0}),
    )
    post(
        client,
        document(commit="c", parents=["b"], minutes=20, medians={"fast": 121.0, "slow": 40.0}),
    )
    metrics = client.get(f"/api/v1/commits/{sha_for('c')}/metrics").json()
    assert metrics["branch"] == "main"
    fast, slow = metric_of(metrics, "fast"), metric_of(metrics, "slow")
    assert fast["baseline"]["commit"] == sha_for("b")
    assert fast["change"] == pytest.approx(0.10, abs=0.01)
    assert slow["change"] == pytest.approx(-0.20, abs=0.01)
    assert fast["unit"] == "us"
    assert fast["statistics"]["n"] == 60
    # b's +10% started a level of one run, which cannot say how far its runs wander: c's
    # change against it waits for the next run of the line, which stays.
    assert fast["verdict"] == "pending"
    before = metric_of(client.get(f"/api/v1/commits/{sha_for('b')}/metrics").json(), "fast")
    assert before["verdict"] == "regressed"  # c did not come back
    post(
        client,
        document(commit="d", parents=["c"], minutes=30, medians={"fast": 121.0, "slow": 40.0}),
    )
    settled = metric_of(client.get(f"/api/v1/commits/{sha_for('c')}/metrics").json(), "fast")
    assert settled["verdict"] == "regressed"
    first = client.get(f"/api/v1/commits/{sha_for('a')}/metrics").json()
    assert metric_of(first, "fast")["baseline"] is None
    assert metric_of(first, "fast")["change"] is None


def test_commit_metrics_are_exactly_the_models_json(client: httpx.Client) -> None:
    """The route writes plain data with orjson; it must be what the documented model gives."""
    from tests.documents import example_document

    post(client, document(commit="a", minutes=0, medians={"fast": 100.0, "slow": 50.0}))
    post(client, document(commit="b", parents=["a"], minutes=10, medians={"fast": 130.0}))
    post(client, example_document())
    for sha in (sha_for("b"), example_document()["commit"]["sha"]):
        answer = client.get(f"/api/v1/commits/{sha}/metrics")
        assert answer.headers["content-type"] == "application/json"
        body = answer.json()
        model = CommitMetrics.model_validate(body)
        assert json.loads(model.model_dump_json()) == body
    # The fields that the model writes in a form of its own: times, analyses, absent series.
    fast = metric_of(client.get(f"/api/v1/commits/{sha_for('b')}/metrics").json(), "fast")
    assert fast["baseline"]["committed_at"].endswith("Z")
    assert fast["analysis"]["verdict"] == fast["verdict"]
    assert body["commit"]["committed_at"] == example_document()["commit"]["committed_at"].replace(
        "+00:00", "Z"
    )


def test_other_fingerprints_are_other_series(client: httpx.Client) -> None:
    post(client, document(commit="a", minutes=0, medians={"k": 100.0}))
    post(
        client,
        document(commit="b", minutes=10, medians={"k": 300.0}, fingerprint="00000000000000bb"),
    )
    metrics = client.get(f"/api/v1/commits/{sha_for('b')}/metrics").json()
    assert metric_of(metrics, "k")["baseline"] is None


def test_commit_metrics_carry_every_section(client: httpx.Client) -> None:
    from tests.documents import example_document

    doc = example_document()
    post(client, doc)
    metrics = client.get(f"/api/v1/commits/{doc['commit']['sha'][:10]}/metrics").json()
    assert metrics["commit"]["author_name"] == "Ada Lovelace"
    assert metrics["commit"]["repository"] == "acme/fused-kernels"
    assert [r["run_id"] for r in metrics["runs"]] == [doc["run_id"]]
    by_name = {(w["workload"], w["params"].get("m")): w for w in metrics["workloads"]}
    gemm = by_name[("gemm_fwd", 1024)]
    # Split-K at 1024³: the timed series is the workload; then its two kernels.
    timed, partial, epilogue = gemm["kernels"]
    assert timed["kernel"] == "gemm_fwd"
    assert timed["metrics"][0]["method"] == "cuda_events"
    assert timed["metrics"][0]["verdict"] == "new"
    assert partial["kernel"] == "gemm_fwd_splitk_partial"
    assert partial["build"]["registers"] == 128
    assert epilogue["build"]["registers"] == 32
    assert partial["ncu_metrics"]["launch__registers_per_thread"] == {
        "value": 128.0,
        "unit": "register/thread",
    }
    assert {f["rule"] for f in partial["ncu_findings"]} >= {"SOLBottleneck", "AchievedOccupancy"}
    assert gemm["correctness"]["passed"] is True
    step = by_name[("train_step", None)]
    assert step["timeline"]["source"] == "cupti"
    assert step["timeline"]["kernels"][0]["kernel"] == "gemm_bwd_nt_dinput"
    assert sum(k["share"] for k in step["timeline"]["kernels"]) == pytest.approx(1.0, abs=0.01)
    assert step["ncu_status"] == "ok"
    smoke = by_name[("gemm_fwd", 32)]
    assert smoke["kernels"][0]["metrics"][0]["method"] == "cupti"
    assert smoke["correctness"]["unwritten"] == 0


def test_unknown_and_malformed_shas(client: httpx.Client) -> None:
    unknown = client.get(f"/api/v1/commits/{'0' * 40}/metrics")
    assert unknown.status_code == 404
    assert "no commit" in unknown.json()["detail"]
    malformed = client.get("/api/v1/commits/xyz!/metrics")
    assert malformed.status_code == 422  # the path's pattern, as the OpenAPI description says
    assert "path.sha" in malformed.json()["detail"] and "{4,40}" in malformed.json()["detail"]


def test_ambiguous_short_sha_lists_candidates(client: httpx.Client) -> None:
    shas = ["abcd" + "1" * 36, "abcd" + "2" * 36]
    for i, sha in enumerate(shas):
        post(client, document(commit=sha, minutes=i))
    answer = client.get("/api/v1/commits/abcd/metrics")
    assert answer.status_code == 400
    assert "ambiguous" in answer.json()["detail"]
    assert sorted(c["sha"] for c in answer.json()["candidates"]) == shas
    unique = client.get("/api/v1/commits/abcd2/metrics")
    assert unique.status_code == 200
    assert unique.json()["commit"]["sha"] == shas[1]


def test_series_history_in_commit_order(client: httpx.Client) -> None:
    # Posted out of order: the history must still follow commit time.
    for label, minutes, median in [("c", 20, 130.0), ("a", 0, 100.0), ("b", 10, 120.0)]:
        post(client, document(commit=label, minutes=minutes, medians={"k": median}))
    post(client, document(commit="f", minutes=30, branch="feature", medians={"k": 999.0}))
    query = {
        "repository": "acme/kernels",
        "workload": "gemm_fwd",
        "kernel": "k",
        "metric": "duration",
    }
    history = client.get("/api/v1/series", params={**query, "branch": "main"}).json()
    assert [p["commit"] for p in history["points"]] == [sha_for(x) for x in "abc"]
    medians = [p["statistics"]["median"] for p in history["points"]]
    assert medians == pytest.approx([100.0, 120.0, 130.0], rel=0.01)
    assert history["points"][0]["subject"] == "commit a"
    last_two = client.get("/api/v1/series", params={**query, "branch": "main", "limit": 2}).json()
    assert [p["commit"] for p in last_two["points"]] == [sha_for("b"), sha_for("c")]
    with_samples = client.get(
        "/api/v1/series",
        params={"id": history["series"]["id"], "branch": "main", "samples": "true"},
    ).json()
    assert len(with_samples["points"][0]["samples"]) == 60
    default = client.get("/api/v1/series", params={"id": history["series"]["id"]}).json()
    assert default["branch"] == "feature"


def test_series_queries_that_match_several_or_none(client: httpx.Client) -> None:
    post(client, document(commit="a", medians={"k1": 1.0, "k2": 2.0}))
    several = client.get("/api/v1/series", params={"workload": "gemm_fwd"})
    assert several.status_code == 400
    assert {c["kernel"] for c in several.json()["candidates"]} == {"k1", "k2"}
    k2 = '{"m":1024,"n":1024,"k":1024,"act":"k2"}'
    by_params = client.get("/api/v1/series", params={"workload": "gemm_fwd", "workload_params": k2})
    assert by_params.status_code == 200
    assert by_params.json()["series"]["kernel"] == "k2"
    # The older name still answers, the same; two that differ are refused; empty is any.
    older = client.get("/api/v1/series", params={"workload": "gemm_fwd", "params": k2})
    assert older.json()["series"]["id"] == by_params.json()["series"]["id"]
    both = client.get("/api/v1/series", params={"workload": "gemm_fwd", "params": k2,
                                                "workload_params": "{}"})  # fmt: skip
    assert both.status_code == 400 and "give one" in both.json()["detail"]
    empty = client.get("/api/v1/series", params={"workload": "gemm_fwd", "workload_params": ""})
    assert empty.status_code == 400 and "candidates" in empty.json()  # k1 and k2: name one
    none = client.get("/api/v1/series", params={"workload": "nope"})
    assert none.status_code == 404
    bad = client.get("/api/v1/series", params={"workload": "gemm_fwd", "params": "[1"})
    assert bad.status_code == 400
    nothing = client.get("/api/v1/series")
    assert nothing.status_code == 400
    bad_limit = client.get("/api/v1/series", params={"id": 1, "limit": 0})
    assert bad_limit.status_code == 422
    assert "limit" in bad_limit.json()["detail"]


def test_healthz_and_unknown_paths(client: httpx.Client) -> None:
    health = client.get("/healthz")
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    missing = client.get("/api/v1/nothing-here")
    assert missing.status_code == 404
    assert "/docs" in missing.json()["detail"]
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert "run_id" in schemas["RunDocument"]["properties"]
    # No component is only a pointer to itself (ReDoc refuses such a document).
    assert [n for n, s in schemas.items() if s == {"$ref": f"#/components/schemas/{n}"}] == []


def test_a_branch_the_repository_never_had_is_a_404_naming_those_it_has(
    client: httpx.Client,
) -> None:
    post(client, document(commit="a", minutes=0, medians={"k": 100.0}))
    post(client, document(commit="f", minutes=10, branch="feature", medians={"k": 100.0}))
    post(client, document(commit="p", minutes=20, branch="pull/7", medians={"k": 100.0}))
    series_id = metric_of(client.get(f"/api/v1/commits/{sha_for('a')}/metrics").json(), "k")[
        "series_id"
    ]
    for path, params in [
        (f"/api/v1/commits/{sha_for('a')}/metrics", {}),
        ("/api/v1/series", {"id": series_id}),
        ("/api/v1/series/work", {"id": series_id}),
    ]:
        answer = client.get(path, params={**params, "branch": "nosuch"})
        assert answer.status_code == 404, (path, answer.text)
        assert "'nosuch'" in answer.json()["detail"]
        assert "feature, main; and 1 pull request branch" in answer.json()["detail"]
        assert answer.json()["branches"] == ["feature", "main"]
        # A branch the repository has stays an answer, empty where nothing was run on it.
        assert client.get(path, params={**params, "branch": "feature"}).status_code == 200
    elsewhere = client.get(f"/api/v1/commits/{sha_for('a')}/metrics", params={"branch": "feature"})
    assert elsewhere.json()["runs"] == []


def test_series_points_carry_the_verdict_the_commit_metrics_give(client: httpx.Client) -> None:
    medians = [100.0, 100.0, 100.0, 110.0, 110.0]
    for i, median in enumerate(medians):
        parents = [f"c{i - 1}"] if i else []
        post(client, document(commit=f"c{i}", parents=parents, minutes=i, medians={"k": median}))
    history = client.get(
        "/api/v1/series", params={"workload": "gemm_fwd", "kernel": "k", "metric": "duration"}
    ).json()
    verdicts = [p["verdict"] for p in history["points"]]
    expected = [
        metric_of(client.get(f"/api/v1/commits/{sha_for(f'c{i}')}/metrics").json(), "k")["verdict"]
        for i in range(len(medians))
    ]
    assert verdicts == expected
    assert verdicts[0] == "new" and "regressed" in verdicts


def test_a_series_point_not_yet_judged_has_no_verdict(settings: Settings) -> None:
    settings.analyse_in_request = False
    settings.analysis_delay_seconds = 3600  # the backlog waits: no verdict during the test
    with LiveServer(create_app(settings, migrate=False)) as live, live.client(ADMIN_TOKEN) as c:
        post(c, document(commit="a", medians={"k": 100.0}))
        history = c.get("/api/v1/series", params={"workload": "gemm_fwd", "kernel": "k"}).json()
    assert [p["verdict"] for p in history["points"]] == [None]


def test_change_fields_say_they_are_fractions(client: httpx.Client) -> None:
    """Pages show percent, the API fractions: the schema must say which."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    changes = [
        "MetricPublic.change", "Analysis.change", "ChangePointPublic.change",
        "WorkPublic.change", "WorkJudged.change", "AlertPublic.change",
        "AlertPublic.confirmed_change", "CompareRow.change",
    ]  # fmt: skip
    fractions = ["RunOffsetPublic.offset", "Analysis.floor", "WorkPublic.tolerance",
                 "Statistics.rel_iqr"]  # fmt: skip
    for where in changes + fractions:
        name, field = where.split(".")
        text = schemas[name]["properties"][field].get("description", "")
        expected = (
            "relative change as a fraction: 0.05 is +5%" if where in changes else "as a fraction: "
        )
        assert expected in text, where


def test_runs_and_commits_are_listed_newest_first_with_filters(client: httpx.Client) -> None:
    """The operations a client pages through before it asks for one run or commit."""
    post(client, document(commit="a", minutes=0, medians={"k": 100.0}))
    post(client, document(commit="b", minutes=10, ancestors=["a"], parents=["a"],
                          medians={"k": 100.0}))  # fmt: skip
    post(client, document(commit="f", minutes=20, branch="feature", medians={"k": 100.0}))
    post(client, document(commit="z", repository="acme/other", medians={"k": 100.0}))
    runs = client.get("/api/v1/runs", params={"repository": "acme/kernels"}).json()
    assert [r["commit"] for r in runs] == [sha_for("f"), sha_for("b"), sha_for("a")]
    assert {r["analysed"] for r in runs} == {True} and runs[0]["branch"] == "feature"
    one = client.get("/api/v1/runs", params={"commit": sha_for("b")[:7]}).json()
    assert [r["commit"] for r in one] == [sha_for("b")]
    assert client.get("/api/v1/runs/" + one[0]["run_id"]).json()["commit"] == sha_for("b")
    limited = client.get("/api/v1/runs", params={"limit": 1}).json()
    assert len(limited) == 1
    commits = client.get("/api/v1/commits", params={"repository": "acme/kernels",
                                                    "branch": "main"}).json()  # fmt: skip
    assert [(c["sha"], c["subject"], c["runs"], c["branches"]) for c in commits] == [
        (sha_for("b"), "commit b", 1, ["main"]),
        (sha_for("a"), "commit a", 1, ["main"]),
    ]
    assert len(client.get("/api/v1/commits").json()) == 4
    unknown = client.get("/api/v1/runs", params={"repository": "acme/none"})
    assert unknown.status_code == 404
    assert client.get("/api/v1/runs", params={"commit": "xyz"}).status_code == 422


def test_alerts_are_filtered_by_commit_series_and_state(client: httpx.Client) -> None:
    """ "Which kernels regressed at commit X": the alerts found there (or bisected to it), one
    series' alerts, and state=all as the alerts page offers it."""
    from tests.documents import post_history

    labels = post_history(client, 6, {"gemm_bias_act_f32": 100.0})
    head = document(commit="head", parents=labels[-1:], ancestors=labels[::-1], minutes=9,
                    medians={"gemm_bias_act_f32": 125.0}, seed=9)  # fmt: skip
    post(client, head)
    (alert,) = client.get("/api/v1/alerts").json()
    sha, series_id = alert["commit"], alert["series"]["id"]

    def ids(**query: object) -> list[int]:
        answer = client.get("/api/v1/alerts", params=query)
        assert answer.status_code == 200, answer.text
        return [a["id"] for a in answer.json()]

    assert ids(commit=sha[:7]) == ids(commit=sha) == [alert["id"]]
    assert ids(commit=sha_for("c5")) == []
    assert ids(series=series_id) == [alert["id"]] and ids(series=series_id + 1000) == []
    assert ids(state="all") == [alert["id"]] and ids(state="open") == []
    assert ids(state=["open", "all"]) == [alert["id"]]
    assert client.get("/api/v1/alerts", params={"commit": "xyz"}).status_code == 422
