"""The pages and their JSON twins through real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import html
import io
import json
import re

import httpx
import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from service.evaluation.verdicts.changepoints import update_change_points
from service.models import Alert, Run
from tests.dashboards.conftest import post_rich_history
from tests.documents import document, post_history
from tests.service.evaluation.alerts.test_groups import regress

PAGES = ["/", "/trends", "/compare", "/alerts"]
TWINS = ["/index.json", "/trends.json", "/compare.json", "/alerts.json"]


def figure(html: str, key: str) -> dict:
    found = re.search(
        rf'<script type="application/json" id="figure-data-{key}">(.*?)</script>', html, re.S
    )
    assert found, f"no figure {key!r} in the page"
    return json.loads(found.group(1))


def test_an_empty_database_shows_helpful_empty_states(anonymous: httpx.Client) -> None:
    for path in PAGES:
        page = anonymous.get(path)
        assert page.status_code == 200, path
        assert page.headers["content-type"].startswith("text/html")
        assert 'class="empty"' in page.text, path
    overview = anonymous.get("/").text
    assert "No results yet" in overview and "<code>kernelwatch demo</code>" in overview
    assert "`" not in overview  # commands are set as code, never in literal backticks
    assert "No results yet" in anonymous.get("/trends").text
    assert "Not enough history yet" in anonymous.get("/compare").text
    for path in TWINS:
        assert anonymous.get(path).status_code == 200, path
    assert anonymous.get("/index.json").json()["recent_runs"] == []
    assert anonymous.get("/trends.json").json()["series"] == []


def test_branch_lists_read_only_the_newest_runs(
    admin: httpx.Client, anonymous: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overview's branches and the trends page's branch choices come from the newest
    BRANCH_WINDOW runs, so that they cost the same however long the history: a branch whose
    runs all fell out of the window is no longer listed (its URL still works)."""
    from service.store.reads import dashboard_reads as pages

    monkeypatch.setattr(pages, "BRANCH_WINDOW", 4)
    for i, branch in enumerate(["old", "old", "main", "main", "main", "dev"]):
        doc = document(commit=f"w{i}", branch=branch, minutes=i)
        assert admin.post("/api/v1/runs", json=doc).status_code == 201
    data = anonymous.get("/index.json").json()
    assert sorted((b["branch"], b["runs"]) for b in data["branches"]) == [("dev", 1), ("main", 3)]
    assert data["branch_window"] == 4
    assert anonymous.get("/trends.json").json()["choices"]["branches"] == ["dev", "main"]
    old = anonymous.get("/trends.json", params={"repository": "acme/kernels", "branch": "old"})
    assert old.status_code == 200 and old.json()["selection"]["branch"] == "old"
    assert old.json()["shown_series"] == 1 and len(old.json()["series"][0]["points"]) == 2


def test_overview_lists_branches_runs_alerts_and_queue(
    admin: httpx.Client, anonymous: httpx.Client
) -> None:
    history = post_rich_history(admin)
    data = anonymous.get("/index.json").json()
    assert [(b["repository"], b["branch"], b["runs"]) for b in data["branches"]] == [
        ("acme/kernels", "main", 10)
    ]
    newest = data["recent_runs"][0]
    assert newest["sha"] == history.sha(9) and sum(newest["verdicts"].values()) == 3
    assert data["recent_runs"][-1]["verdicts"] == {"new": 3}
    assert [a["series"]["workload"] for a in data["alerts"]] == ["train_step"]
    assert data["queue"]["counts"].get("queued", 0) >= 1  # the alert's confirmation job
    page = anonymous.get("/").text
    assert history.sha(9)[:10] in page and "acme/kernels" in page and "regressed" in page
    assert figure(page, "verdicts")["layout"]["barmode"] == "stack"


def test_trends_keep_every_choice_and_export_csv(
    admin: httpx.Client, anonymous: httpx.Client
) -> None:
    post_rich_history(admin)
    data = anonymous.get("/trends.json").json()
    assert data["selection"]["repository"] == "acme/kernels"
    assert data["selection"]["branch"] == "main" and data["selection"]["metric"] == "duration"
    assert data["matching_series"] == data["shown_series"] == 3
    assert all(len(s["points"]) == 10 for s in data["series"])
    assert set(data["choices"]["workloads"]) == {"gemm_fwd", "train_step"}

    query = "workload=train_step&points=5&log=1"
    narrowed = anonymous.get(f"/trends.json?{query}").json()
    (only,) = narrowed["series"]
    assert only["series"]["workload"] == "train_step" and len(only["points"]) == 5
    assert narrowed["selection"]["log"] is True

    page = anonymous.get(f"/trends?{query}").text
    assert "<option selected>train_step</option>" in page
    assert 'value="5"' in page and 'id="log-toggle" checked' in page
    fig = figure(page, "trend")
    assert fig["layout"]["yaxis"]["type"] == "log"
    (median_index,) = fig["layout"]["meta"]["median_traces"]
    median = fig["data"][median_index]
    assert len(median["y"]) == 5 and median["customdata"][-1][7] == only["points"][-1]["commit"]
    assert "/trends.csv?" in page and "workload=train_step" in page

    # The page reads plain data; the twin must say what the series API's model says.
    api = anonymous.get(
        "/api/v1/series",
        params={"id": only["series"]["id"], "branch": "main", "limit": 5},
    ).json()
    assert only == api

    exported = anonymous.get(f"/trends.csv?{query}")
    assert exported.headers["content-type"].startswith("text/csv")
    assert "attachment" in exported.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert len(rows) == 5 and {r["workload"] for r in rows} == {"train_step"}
    assert float(rows[-1]["median"]) == only["points"][-1]["statistics"]["median"]


def test_trends_say_when_there_is_not_enough_history(
    admin: httpx.Client, anonymous: httpx.Client
) -> None:
    post_history(admin, 1, {"gemm_bias_act_f32": 100.0})
    page = anonymous.get("/trends")
    assert page.status_code == 200 and "Not enough history yet" in page.text
    assert 'id="figure-data-trend"' not in page.text
    assert anonymous.get("/trends?repository=nope/nope").status_code == 404
    missing = anonymous.get("/trends.json?repository=nope/nope")
    assert missing.status_code == 404 and "nope/nope" in missing.json()["detail"]


def test_trends_explain_an_unknown_metric_or_branch_and_a_log_change_axis(
    admin: httpx.Client, anonymous: httpx.Client
) -> None:
    post_history(admin, 3, {"gemm_bias_act_f32": 100.0})
    for path in ("/trends.json", "/trends"):
        bogus = anonymous.get(path, params={"metric": "bogus"})
        assert bogus.status_code == 404, path
        assert "'bogus'" in html.unescape(bogus.text) and "duration" in bogus.text
        branch = anonymous.get(path, params={"branch": "nosuch"})
        assert branch.status_code == 404 and "'nosuch'" in html.unescape(branch.text)
        assert "its branches: main" in branch.text
    both = anonymous.get("/trends.json", params={"log": 1, "scale": "change"})
    assert both.status_code == 422 and "scale=value" in both.json()["detail"]
    assert anonymous.get("/trends.json", params={"scale": "ratio"}).status_code == 422
    assert anonymous.get("/trends.json").json()["selection"]["scale"] == "change"
    assert anonymous.get("/trends.json?log=1").json()["selection"]["scale"] == "value"


def test_trends_draw_change_by_commit_and_name_environments_by_their_gpu(
    admin: httpx.Client, anonymous: httpx.Client
) -> None:
    labels = post_history(admin, 3, {"gemm_bias_act_f32": 100.0})
    gpu = document(commit="c0")["environment"]["gpu"]["name"]
    other = document(commit="c3", parents=labels[-1:], ancestors=labels[::-1], minutes=3,
                     fingerprint="00000000000000bb")  # fmt: skip
    assert admin.post("/api/v1/runs", json=other).status_code == 201
    data = anonymous.get("/trends.json").json()
    assert data["choices"]["environments"] == {
        "00000000000000aa": f"{gpu} [00000000]",  # two environments of one GPU: told apart
        "00000000000000bb": f"{gpu} [00000000]",
    }
    page = anonymous.get("/trends").text
    assert f'title="00000000000000aa">{html.escape(gpu)} [00000000]</td>' in page
    fig = figure(page, "trend")
    assert fig["layout"]["meta"]["scale"] == "change"
    medians = [fig["data"][i] for i in fig["layout"]["meta"]["median_traces"]]
    assert sorted(x for t in medians for x in t["x"]) == [0, 1, 2, 3]
    shas = fig["layout"]["meta"]["commits"]
    assert fig["layout"]["xaxis"]["ticktext"][0] == shas[0][:10]
    values = figure(anonymous.get("/trends?scale=value").text, "trend")
    assert values["layout"]["meta"]["scale"] == "value"


def test_a_workload_that_failed_its_check_is_a_broken_row_not_unmeasured(
    admin: httpx.Client, anonymous: httpx.Client
) -> None:
    labels = post_history(admin, 3, {"gemm_bias_act_f32": 100.0})
    doc = document(commit="c3", parents=labels[-1:], ancestors=labels[::-1], minutes=3)
    (failed,) = doc["workloads"]
    failed.update(status="correctness_failed", timing=None)
    failed["correctness"].update(passed=False, error_norm=0.5)
    assert admin.post("/api/v1/runs", json=doc).status_code == 201, doc
    data = anonymous.get(f"/commits/{doc['commit']['sha']}.json").json()
    (row,) = data["rows"]
    assert (row["workload"], row["verdict"], row["correct"]) == ("gemm_fwd", "broken", False)
    assert row["error_norm"] == 0.5 and data["not_measured"] == []
    page = anonymous.get(f"/commits/{doc['commit']['sha']}").text
    assert "Not measured in this run" not in page
    assert 'class="verdict-broken"' in page and "FAIL" in page


def test_trends_mark_change_points_and_alerts(
    admin: httpx.Client, anonymous: httpx.Client, engine: Engine
) -> None:
    history = post_rich_history(admin, runs=12, regressed_at=7)
    # Change points are computed here explicitly (ingest may move them to a background step).
    with Session(engine) as session, session.begin():
        newest = session.scalars(select(Run).order_by(Run.id.desc()).limit(1)).one()
        update_change_points(session, newest)
    data = anonymous.get("/trends.json?workload=train_step").json()
    (series,) = data["series"]
    assert [cp["commit"] for cp in series["change_points"]] == [history.sha(7)]
    assert series["change_points"][0]["change"] > 0.1
    assert [a["commit"] for a in data["alerts"]] == [history.sha(7)]
    fig = figure(anonymous.get("/trends?workload=train_step").text, "trend")
    names = {t["name"]: t for t in fig["data"]}
    marks = [t for name, t in names.items() if name.endswith("change points")]
    assert len(marks) == 1 and len(marks[0]["x"]) == 1
    assert "alerts" in names and names["alerts"]["meta"]["series"]


def test_commit_page_shows_medians_changes_throughput_and_profiles(
    admin: httpx.Client, anonymous: httpx.Client
) -> None:
    history = post_rich_history(admin)
    sha = history.sha(history.regressed_at)
    data = anonymous.get(f"/commits/{sha}.json").json()
    assert data["commit"]["sha"] == sha
    step = next(r for r in data["rows"] if r["workload"] == "train_step")
    assert step["verdict"] == "regressed" and step["change"] > 0.1
    assert step["baseline_commit"] == history.sha(history.regressed_at - 1)
    # 10.8 GFLOP per step in ~640 us on an H100 (67 TFLOP/s FP32).
    assert 15 < step["tflops"] < 18 and 0.2 < step["flop_fraction"] < 0.3
    assert step["byte_fraction"] < step["flop_fraction"] and step["bound"] == "compute"
    assert step["error_norm"] > 0
    (run,) = data["run_details"]
    assert run["gpu"]["name"] == "NVIDIA H100 80GB HBM3" and "ncu:" in run["log_tail"]

    page = anonymous.get(f"/commits/{sha[:8]}").text
    assert "train_step" in page and "TFLOP/s" in page and "regressed" in page
    assert "AchievedOccupancy" in page  # an ncu finding
    assert "registers" in page and "ptxas info" in page  # build resources and log
    breakdown = figure(page, "breakdown0")
    assert breakdown["data"][0]["y"][-1] == "gemm_bwd_nt_dinput"  # the largest share on top
    changes = figure(page, "changes")
    assert len(changes["data"][0]["x"]) == 3
    # The alert this commit opened, linked; the commit before it has none.
    (alert,) = data["alerts"]
    assert alert["role"] == "opened here" and alert["commit"] == sha
    assert f'href="/alerts?state=all#alert-{alert["id"]}"' in page
    assert anonymous.get(f"/commits/{history.sha(0)}.json").json()["alerts"] == []


def test_commit_errors_are_a_page_or_json(anonymous: httpx.Client) -> None:
    page = anonymous.get("/commits/abcdef12")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "no commit abcdef12 has results yet" in page.text
    twin = anonymous.get("/commits/abcdef12.json")
    assert twin.status_code == 404 and twin.json()["detail"] == "no commit abcdef12 has results yet"
    bad = anonymous.get("/commits/not-a-sha.json")  # the path's pattern (OpenAPI's too)
    assert bad.status_code == 422 and "path.sha" in bad.json()["detail"]


def test_the_first_commit_says_there_is_nothing_to_compare_yet(
    admin: httpx.Client, anonymous: httpx.Client
) -> None:
    history = post_rich_history(admin, runs=1)
    page = anonymous.get(f"/commits/{history.sha(0)}").text
    assert "Not enough history yet" in page and "none yet" in page


def test_compare_sorts_by_impact(admin: httpx.Client, anonymous: httpx.Client) -> None:
    history = post_rich_history(admin)
    base, head = history.sha(5), history.sha(8)
    data = anonymous.get(f"/compare.json?base={base}&head={head}").json()
    rows = data["comparison"]["rows"]
    assert rows[0]["series"]["workload"] == "train_step" and rows[0]["significant"]
    assert rows[0]["change"] > 0.1
    page = anonymous.get(f"/compare?base={base[:8]}&head={head[:8]}").text
    assert "significant" in page and figure(page, "changes")["data"][0]["y"][-1].startswith(
        "train_step"
    )
    suggestions = anonymous.get("/compare.json").json()["suggestions"]
    assert suggestions[:2] == [history.sha(9), history.sha(8)]
    assert anonymous.get("/compare?base=abcd1234&head=abcd1235").status_code == 404


def test_alerts_page_lists_and_triage_goes_through_the_api(
    admin: httpx.Client, anonymous: httpx.Client, engine: Engine
) -> None:
    post_rich_history(admin)
    (alert,) = anonymous.get("/alerts.json").json()["alerts"]
    assert alert["state"] == "suspected" and "train_step" in alert["summary"]
    page = anonymous.get("/alerts").text
    assert f'id="alert-{alert["id"]}"' in page and 'class="triage"' in page
    # The state filter offers "all" and every state by name, the active ones chosen.
    offered = [o.split(">")[-1] for o in page.split("</option>")[:7]]
    assert offered == ["all", "suspected", "open", "acknowledged", "fixed", "invalid",
                       "dismissed"]  # fmt: skip
    assert "<option selected>open</option>" in page
    with engine.begin() as conn:  # as if the confirmation had reproduced it
        conn.execute(update(Alert).values(state="open"))
    assert (
        anonymous.patch(f"/api/v1/alerts/{alert['id']}", json={"state": "acknowledged"}).status_code
        == 401
    )
    answer = admin.patch(
        f"/api/v1/alerts/{alert['id']}",
        json={"state": "acknowledged", "note": "looking into it", "actor": "ada"},
    )
    assert answer.status_code == 200
    assert anonymous.get("/alerts.json?state=open").json()["alerts"] == []
    (listed,) = anonymous.get("/alerts.json?state=acknowledged").json()["alerts"]
    assert listed["note"] == "looking into it"
    assert "looking into it" in anonymous.get("/alerts?state=all").text
    # Fixed: nothing needs attention, and the default view shows the newest alerts instead.
    fixed = admin.patch(f"/api/v1/alerts/{alert['id']}", json={"state": "fixed", "actor": "ada"})
    assert fixed.status_code == 200
    default = anonymous.get("/alerts.json").json()
    assert [a["id"] for a in default["alerts"]] == [alert["id"]]
    assert default["notice"].startswith("Nothing needs attention")
    assert default["notice"] in html.unescape(anonymous.get("/alerts").text)
    asked = anonymous.get("/alerts.json?state=open").json()  # asked for: no stand-in
    assert asked["alerts"] == [] and asked["notice"] is None


def test_alerts_page_heads_each_group_with_its_cause_and_lists_its_alerts_beneath(
    admin: httpx.Client, anonymous: httpx.Client, engine: Engine
) -> None:
    regress(admin)  # gemm_a and gemm_b slowed by gemm_shared's occupancy; lonely by its own
    with engine.begin() as conn:  # as if the confirmation had reproduced them
        conn.execute(update(Alert).values(state="open"))
    data = anonymous.get("/alerts.json").json()
    ids = {a["series"]["params"]["act"]: a["id"] for a in data["alerts"]}
    a, b, lonely = ids["gemm_a"], ids["gemm_b"], ids["lonely"]
    assert [g["alert_ids"] for g in data["groups"]] == [[lonely], [b, a]]
    assert "alerts" not in data["groups"][0]  # named by id: each alert is listed once
    page = anonymous.get("/alerts").text
    _, alone, shared = page.split('<section class="alert-group"')
    headline = re.search(r'<h2 class="group-headline">(.*?)</h2>', shared, re.S)
    assert headline is not None and data["groups"][1]["headline"] in html.unescape(
        headline.group(1)
    )
    assert data["groups"][1]["headline"].startswith("gemm_shared: lower occupancy (registers)")
    # Its alerts beneath, the larger change first, each with its detail and its own form; one
    # form triages the group. An alert alone has its own form only.
    assert shared.index(f'id="alert-{b}"') < shared.index(f'id="alert-{a}"')
    assert f'<form class="group-triage" data-alert-ids="{b},{a}">' in shared
    assert shared.count('<form class="triage"') == 2 and "ranked-causes" in shared
    assert f'id="alert-{lonely}"' in alone and "group-triage" not in alone


def test_plotly_is_served_by_the_service_itself(admin: httpx.Client) -> None:
    post_rich_history(admin, runs=2)
    page = admin.get("/trends").text
    assert '<script src="/static/vendor/plotly.min.js"' in page
    assert not re.search(r'<script[^>]+src="https?:', page)  # no CDN: works offline
    bundle = admin.get("/static/vendor/plotly.min.js")
    assert bundle.status_code == 200 and "javascript" in bundle.headers["content-type"]
    assert len(bundle.content) > 1_000_000
    assert admin.get("/static/pages.js").status_code == 200
    assert admin.get("/static/style.css").status_code == 200


@pytest.mark.parametrize(
    ("page", "twin"),
    [
        ("/alerts?state=bogus", "/alerts.json?state=bogus"),
        ("/alerts?limit=0", "/alerts.json?limit=0"),
        ("/trends?points=abc", "/trends.json?points=abc"),
        ("/trends?series=0", "/trends.json?series=0"),
        ("/trends?points=5000", "/trends.json?points=5000"),
        ("/commits/zz", "/commits/zz.json"),
        ("/commits/abcd1234", "/commits/abcd1234.json"),
    ],
)
def test_a_page_refuses_what_its_json_twin_refuses_in_the_same_words(
    anonymous: httpx.Client, page: str, twin: str
) -> None:
    as_json, as_page = anonymous.get(twin), anonymous.get(page)
    assert 400 <= as_json.status_code < 500
    assert as_page.status_code == as_json.status_code
    assert as_page.headers["content-type"].startswith("text/html")
    shown = re.search(r'<p class="error-detail">(.*?)</p>', as_page.text, re.S)
    assert shown is not None and html.unescape(shown.group(1)) == as_json.json()["detail"]
