"""Pull requests end to end over HTTP on SQLite and PostgreSQL: the signed pull_request event
queues the head on branch pull/<n>; the PR's run is judged against its merge base on the target
branch (whose run is queued when missing, and which re-judges the PR when it arrives), opens no
alert and stays out of the target branch's history; closing the PR cancels what is queued."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.core.settings import Settings
from service.models import Alert, Job, PullRequest
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.service.api.routes.test_webhooks import Hook, _server

REPO = "acme/kernels"


def pr_event(action: str, number: int = 7, head: str = "pr-head", base: str = "main-2",
             merged: bool = False) -> dict[str, Any]:  # fmt: skip
    return {
        "action": action,
        "number": number,
        "pull_request": {
            "number": number,
            "title": "gemm: a faster epilogue",
            "state": "closed" if action == "closed" else "open",
            "merged": merged,
            "head": {"ref": "faster-epilogue", "sha": sha_for(head), "repo": {"full_name": REPO}},
            "base": {"ref": "main", "sha": sha_for(base), "repo": {"full_name": REPO}},
        },
        "repository": {"full_name": REPO, "clone_url": f"https://github.com/{REPO}.git"},
        "sender": {"login": "mira"},
    }


@pytest.fixture
def service(settings: Settings) -> Iterator[tuple[Hook, httpx.Client]]:
    with _server(settings) as live, live.client() as client, live.client(ADMIN_TOKEN) as admin:
        yield Hook(client), admin


def jobs(engine: Engine) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(select(Job).order_by(Job.id)).all())


def test_opened_synchronize_and_closed(service: tuple[Hook, httpx.Client], engine: Engine) -> None:
    hook, _ = service
    answer = hook.send(pr_event("opened"), event="pull_request")
    assert answer.status_code == 202, answer.text
    (job,) = jobs(engine)
    assert (job.commit_sha, job.branch, job.state) == (sha_for("pr-head"), "pull/7", "queued")
    assert job.payload == {"pull_request": {"number": 7, "base_ref": "main",
                                            "base_sha": sha_for("main-2")}}  # fmt: skip
    again = hook.send(pr_event("synchronize", head="pr-head-2"), event="pull_request")
    assert "cancelled 1 older queued job" in again.json()["detail"]
    states = [(j.commit_sha, j.state) for j in jobs(engine)]
    assert states == [(sha_for("pr-head"), "cancelled"), (sha_for("pr-head-2"), "queued")]
    assert hook.send(pr_event("labeled"), event="pull_request").status_code == 202
    closed = hook.send(pr_event("closed", merged=True), event="pull_request")
    assert closed.status_code == 200 and "merged: cancelled 1 queued job" in closed.json()["detail"]
    assert [j.state for j in jobs(engine)] == ["cancelled", "cancelled"]
    with engine.connect() as conn:
        pr = conn.execute(select(PullRequest)).one()
    assert (pr.number, pr.state, pr.head_sha, pr.base_ref) == (7, "merged", sha_for("pr-head-2"),
                                                                "main")  # fmt: skip


def test_a_malformed_pull_request_event_is_422_and_queues_nothing(
    service: tuple[Hook, httpx.Client], engine: Engine
) -> None:
    hook, _ = service
    bad = pr_event("opened")
    bad["pull_request"]["head"]["sha"] = "not-a-sha"
    answer = hook.send(bad, event="pull_request")
    assert answer.status_code == 422 and "head" in answer.text
    assert jobs(engine) == []


def pr_document(head: str, merge_base: str | None, median: float, **kw: Any) -> dict[str, Any]:
    doc = document(commit=head, branch="pull/7", ancestors=["pr-1", "main-1", "main-0"],
                   medians={"gemm_bias_act_f32": median}, **kw)  # fmt: skip
    doc["pull_request"] = {"number": 7, "base_ref": "main",
                           "merge_base": sha_for(merge_base) if merge_base else None}  # fmt: skip
    return doc


def verdicts(admin: httpx.Client, label: str, branch: str) -> dict[str, Any]:
    metrics = admin.get(f"/api/v1/commits/{sha_for(label)}/metrics",
                        params={"branch": branch}).json()  # fmt: skip
    return {k["kernel"]: k["metrics"][0] for w in metrics["workloads"] for k in w["kernels"]}


def test_a_pr_is_judged_against_its_merge_base_and_opens_no_alert(
    service: tuple[Hook, httpx.Client], engine: Engine
) -> None:
    _, admin = service
    for i, label in enumerate(("main-0", "main-1")):
        ancestors = ["main-0"] if label == "main-1" else []
        answer = admin.post("/api/v1/runs", json=document(
            commit=label, ancestors=ancestors, minutes=i, seed=i,
            medians={"gemm_bias_act_f32": 100.0}))  # fmt: skip
        assert answer.status_code == 201, answer.text
    # The PR's own earlier push, much faster: it must not be the baseline of the next one.
    early = pr_document("pr-1", "main-1", 80.0, minutes=3, seed=3)
    early["commit"]["ancestors"] = [sha_for("main-1"), sha_for("main-0")]
    assert admin.post("/api/v1/runs", json=early).status_code == 201
    head = pr_document("pr-2", "main-1", 112.0, minutes=4, seed=4)
    answer = admin.post("/api/v1/runs", json=head)
    assert answer.status_code == 201, answer.text
    judged = verdicts(admin, "pr-2", "pull/7")["gemm_bias_act_f32"]
    assert judged["verdict"] == "regressed"  # +12% against main-1, though -... against pr-1
    assert judged["baseline"]["commit"] == sha_for("main-1")
    with engine.connect() as conn:
        assert conn.execute(select(Alert)).all() == []  # a PR's verdicts open no alert
        # Its merge base is measured: the one job confirms the PR's slowdown against it.
        jobs = conn.execute(select(Job.kind, Job.commit_sha, Job.payload)).all()
        assert [(kind, sha) for kind, sha, _ in jobs] == [("confirm", sha_for("pr-2"))]
        assert jobs[0].payload["base_sha"] == sha_for("main-1")
    trend = admin.get("/trends.json", params={"repository": REPO, "branch": "main"}).json()
    points = [p for history in trend["series"] for p in history["points"]]
    assert {p["commit"] for p in points} == {sha_for("main-0"), sha_for("main-1")}


def test_against_a_merge_base_level_of_one_run_a_prs_change_is_pending(
    service: tuple[Hook, httpx.Client], engine: Engine
) -> None:
    """main-1 alone on main: one run cannot say how far the base's runs wander, and a pull
    request has no next run on its line to settle it: pending, until main has two."""
    _, admin = service
    main = document(commit="main-1", medians={"gemm_bias_act_f32": 100.0})
    assert admin.post("/api/v1/runs", json=main).status_code == 201
    head = pr_document("pr-2", "main-1", 112.0, minutes=4, seed=4)
    assert admin.post("/api/v1/runs", json=head).status_code == 201
    judged = verdicts(admin, "pr-2", "pull/7")["gemm_bias_act_f32"]
    assert judged["verdict"] == "pending"
    assert "the next run of this line settles it" in judged["analysis"]["note"]


def test_a_merge_base_without_a_run_is_queued_and_its_run_rejudges_the_pr(
    service: tuple[Hook, httpx.Client], engine: Engine
) -> None:
    _, admin = service
    assert admin.post("/api/v1/runs", json=document(
        commit="main-0", medians={"gemm_bias_act_f32": 100.0})).status_code == 201  # fmt: skip
    head = pr_document("pr-2", "main-1", 112.0, minutes=4, seed=4)
    assert admin.post("/api/v1/runs", json=head).status_code == 201
    assert verdicts(admin, "pr-2", "pull/7")["gemm_bias_act_f32"]["verdict"] == "new"
    (job,) = jobs(engine)
    assert (job.commit_sha, job.branch, job.state) == (sha_for("main-1"), "main", "queued")
    # A second PR run does not queue the merge base twice.
    again = pr_document("pr-3", "main-1", 112.0, minutes=5, seed=5)
    assert admin.post("/api/v1/runs", json=again).status_code == 201
    assert len(jobs(engine)) == 1
    base = document(commit="main-1", ancestors=["main-0"], minutes=1, seed=1,
                    medians={"gemm_bias_act_f32": 100.0})  # fmt: skip
    assert admin.post("/api/v1/runs", json=base).status_code == 201
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the PR's run went back on the backlog: judged again
        judged = verdicts(admin, "pr-2", "pull/7")["gemm_bias_act_f32"]
        if judged["verdict"] != "new":
            break
        time.sleep(0.2)
    assert judged["verdict"] == "regressed", judged
    assert judged["baseline"]["commit"] == sha_for("main-1")


def test_a_pr_document_on_another_branch_is_refused(service: tuple[Hook, httpx.Client]) -> None:
    _, admin = service
    doc = pr_document("pr-2", "main-1", 100.0)
    doc["branch"] = "main"
    answer = admin.post("/api/v1/runs", json=doc)
    assert answer.status_code == 422 and "pull/7" in answer.text


def post_main(admin: httpx.Client) -> None:
    """Two runs on main, main-1 the merge base: a level that knows its run-to-run wander (one
    run would leave the pull request's verdict pending, service.analysis.verdicts)."""
    for i, label in enumerate(("main-0", "main-1")):
        doc = document(commit=label, parents=["main-0"] if i else [],
                       ancestors=["main-0"] if i else [], minutes=i, seed=i,
                       medians={"gemm_bias_act_f32": 100.0})  # fmt: skip
        assert admin.post("/api/v1/runs", json=doc).status_code == 201


def test_the_prs_status_and_one_comment_updated_in_place(
    settings: Settings, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against a local server standing in for GitHub: the head gets a commit status, the PR one
    comment with the regressed series, and the next push's run rewrites that same comment."""
    from service.integrations.github import api
    from tests.service.integrations.github.test_statuses import FakeGitHub, with_github

    monkeypatch.setattr(api, "RETRY_DELAYS", (0.05,))  # the status's and the comment's
    with FakeGitHub() as fake:
        configured = with_github(settings, fake)
        with (
            _server(configured) as live,
            live.client() as client,
            live.client(ADMIN_TOKEN) as admin,
        ):
            hook = Hook(client)
            post_main(admin)
            assert hook.send(pr_event("opened", head="pr-head", base="main-1"),
                             event="pull_request").status_code == 202  # fmt: skip
            head = pr_document("pr-head", "main-1", 112.0, minutes=4, seed=4)
            assert admin.post("/api/v1/runs", json=head).status_code == 201
            fake.wait_for(4)  # main's two statuses, the head's status, the comment
            comments = [r for r in fake.requests if "/comments" in r.path]
            assert [r.path for r in comments] == ["/repos/acme/kernels/issues/7/comments"]
            body = comments[0].body["body"]
            assert "merge base " + sha_for("main-1")[:12] in body and "| regressed |" in body
            assert f"/commits/{sha_for('pr-head')}?branch=pull/7" in body
            assert any(r.path.endswith(f"/statuses/{sha_for('pr-head')}") for r in fake.requests)
            assert hook.send(pr_event("synchronize", head="pr-head-2", base="main-1"),
                             event="pull_request").status_code == 202  # fmt: skip
            again = pr_document("pr-head-2", "main-1", 100.2, minutes=5, seed=5)
            assert admin.post("/api/v1/runs", json=again).status_code == 201
            fake.wait_for(6)
    comments = [r for r in fake.requests if "/comments" in r.path]
    assert [r.path for r in comments] == ["/repos/acme/kernels/issues/7/comments",
                                          "/repos/acme/kernels/issues/comments/1"]  # fmt: skip
    assert "| regressed |" not in comments[1].body["body"]
    with engine.connect() as conn:
        assert conn.execute(select(PullRequest.comment_id)).scalar_one() == 1


def test_the_pull_requests_page_and_its_json_twin(
    service: tuple[Hook, httpx.Client], engine: Engine
) -> None:
    hook, admin = service
    assert admin.get("/pulls").status_code == 200 and "No pull request" in admin.get("/pulls").text
    post_main(admin)
    hook.send(pr_event("opened", head="pr-head", base="main-1"), event="pull_request")
    assert admin.get("/pulls.json").json()["pulls"][0]["run_id"] is None  # waiting for a runner
    head = pr_document("pr-head", "main-1", 112.0, minutes=4, seed=4)
    assert admin.post("/api/v1/runs", json=head).status_code == 201
    (pr,) = admin.get("/pulls.json", params={"state": "open"}).json()["pulls"]
    assert (pr["number"], pr["merge_base"], pr["verdict_counts"]) == (
        7, sha_for("main-1"), {"regressed": 1})  # fmt: skip
    page = admin.get("/pulls", params={"repository": REPO}).text
    assert f"/commits/{sha_for('pr-head')}?repository={REPO}&amp;branch=pull/7" in page
    assert f"/compare?base={sha_for('main-1')}&amp;head={sha_for('pr-head')}" in page
    assert admin.get("/pulls.json", params={"state": "merged"}).json()["pulls"] == []
    assert admin.get("/pulls.json", params={"state": "bogus"}).status_code == 422


def test_the_pull_requests_read_costs_three_statements_however_many_prs(
    service: tuple[Hook, httpx.Client], engine: Engine
) -> None:
    """Twelve PRs, one measured twice (its newest run counts): the page's read is three
    statements (the PRs, their heads' runs, the verdicts), not two a PR."""
    from sqlalchemy import event

    from service.store.reads import pull_reads

    hook, admin = service
    post_main(admin)
    for number in range(1, 13):
        hook.send(pr_event("opened", number=number, head=f"head-{number}", base="main-1"),
                  event="pull_request")  # fmt: skip
    docs = [
        pr_document("head-7", "main-1", median, minutes=seed, seed=seed)
        for seed, median in ((4, 100.0), (5, 112.0))
    ]  # measured twice: the newest counts
    for doc in docs:
        assert admin.post("/api/v1/runs", json=doc).status_code == 201
    statements: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    with Session(engine) as session:
        event.listen(engine, "before_cursor_execute", count)
        try:
            rows = pull_reads.pulls(session, REPO, "open", 100)
        finally:
            event.remove(engine, "before_cursor_execute", count)
    assert len(rows) == 12 and len(statements) == 3, statements
    (seven,) = [r for r in rows if r.pull.number == 7]
    assert seven.run_uuid == docs[-1]["run_id"]
    assert seven.verdict_counts == {"regressed": 1}  # +12%: the first run's were unchanged
    assert all(r.run_uuid is None for r in rows if r.pull.number != 7)
