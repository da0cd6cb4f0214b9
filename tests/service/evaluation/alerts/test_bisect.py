"""Bisection over real HTTP: a regression confirmed at the head of a multi-commit push is
bisected, one interleaved job at a time, down to the first bad commit."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.core.settings import Settings
from service.models import Job, Repository
from service.store.jobs.queue import enqueue
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.e2e import wait_for
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import Hook, _server, push_payload
from tests.service.evaluation.alerts.test_lifecycle import runner_token

PUSH = ["p1", "p2", "p3", "p4", "p5", "head"]


@pytest.fixture
def admin(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def history(admin: httpx.Client) -> list[str]:
    labels: list[str] = []
    for i in range(8):
        label = f"c{i}"
        doc = document(
            commit=label,
            parents=labels[-1:],
            ancestors=labels[::-1],
            minutes=i,
            medians={"gemm_bias_act_fwd": 100.0},
            seed=i,
        )
        assert admin.post("/api/v1/runs", json=doc).status_code == 201
        labels.append(label)
    return labels


def queue_head(engine: Engine, push: list[str]) -> int:
    """The head's run job as a push of `push` (labels, oldest first) would have queued it."""
    with Session(engine) as session, session.begin():
        repo = session.scalars(select(Repository)).one()
        (job,) = enqueue(
            session,
            repository_id=repo.id,
            sha=sha_for(push[-1]),
            branch="main",
            label_sets=[{}],
            max_attempts=3,
        )
        if len(push) > 1:
            job.payload = {"push_commits": [sha_for(p) for p in push]}
        return job.id


def post_head(runner: httpx.Client, labels: list[str], head: str, median: float = 108.0) -> None:
    claim = runner.post("/api/v1/jobs/claim").json()
    assert claim["job"]["kind"] == "run"
    doc = document(
        commit=head,
        parents=labels[-1:],
        ancestors=labels[::-1],
        minutes=20,
        medians={"gemm_bias_act_fwd": median},
        seed=50,
    )
    doc["job_id"], doc["lease_token"] = claim["job"]["id"], claim["attempt_token"]
    answer = runner.post("/api/v1/runs", json=doc)
    assert answer.status_code == 201, answer.text


def paired(claim: dict, head: str, head_median: float, seed: int) -> dict:
    job = claim["job"]
    # The push's commits were made between the history (minutes 0-7) and the head (20).
    minutes = 10 + PUSH.index(head) if head in PUSH[:-1] else 20
    doc = document(
        commit=head, medians={"gemm_bias_act_fwd": head_median}, seed=seed, minutes=minutes
    )
    base = document(
        commit=job["payload"]["base_sha"], medians={"gemm_bias_act_fwd": 100.0}, seed=seed + 1
    )
    doc["job_id"], doc["lease_token"] = job["id"], claim["attempt_token"]
    doc["paired_base"] = base
    return doc


def confirm(runner: httpx.Client, median: float = 108.0) -> None:
    claim = runner.post("/api/v1/jobs/claim").json()
    assert claim["job"]["kind"] == "confirm"
    answer = runner.post("/api/v1/runs", json=paired(claim, "head", median, 70))
    assert answer.status_code == 201, answer.text
    assert "open" in answer.json()["detail"]


def test_a_regression_at_the_head_of_a_push_is_bisected_to_its_first_bad_commit(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    labels = history(admin)
    queue_head(engine, PUSH)
    first_bad = "p3"
    by_sha = {sha_for(p): p for p in PUSH}
    tested: list[str] = []
    with server.client(runner_token(engine)) as runner:
        post_head(runner, labels, "head")
        confirm(runner)
        (alert,) = admin.get("/api/v1/alerts").json()
        assert alert["bisect"]["state"] == "running"
        assert alert["bisect"]["candidates"] == [sha_for(p) for p in PUSH[:-1]]
        for step in range(10):
            answer = runner.post("/api/v1/jobs/claim")
            if answer.status_code == 204:
                break
            claim = answer.json()
            job = claim["job"]
            assert job["kind"] == "bisect"
            assert job["required_labels"] == {"runner": "h100-a"}
            assert job["payload"]["alert_ids"] == [alert["id"]]
            label = by_sha[job["commit"]]
            tested.append(label)
            slow = PUSH.index(label) >= PUSH.index(first_bad)
            doc = paired(claim, label, 108.0 if slow else 100.0, 100 + 2 * step)
            answer = runner.post("/api/v1/runs", json=doc)
            assert answer.status_code == 201, answer.text
            assert "bisect" in answer.json()["detail"]
    # Middle of p1..p5 is p3 (bad), then of p1..p2 is p1 (good), then p2 (good).
    assert tested == ["p3", "p1", "p2"]
    done = admin.get(f"/api/v1/alerts/{alert['id']}").json()
    assert done["state"] == "open"
    assert done["first_bad_commit"] == sha_for(first_bad)
    # The bisected commit names its alert in the API, though the alert was found at the head.
    at_culprit = admin.get("/api/v1/alerts", params={"commit": sha_for(first_bad)}).json()
    assert [a["id"] for a in at_culprit] == [alert["id"]]
    assert done["bisect"]["state"] == "done"
    assert done["bisect"]["good"] == sha_for("p2")
    assert done["bisect"]["bad"] == sha_for("p3")
    verdicts = {by_sha[s]: t["bad"] for s, t in done["bisect"]["tested"].items()}
    assert verdicts == {"p3": True, "p1": False, "p2": False}
    assert done["bisect"]["tested"][sha_for("p3")]["change"] == pytest.approx(0.08, abs=0.01)
    assert done["events"][-1]["note"].startswith(f"bisected: first bad commit {sha_for('p3')[:12]}")
    assert done["events"][-1]["from_state"] == done["events"][-1]["to_state"] == "open"
    # Bisect documents are not runs: the series keeps the 8 commits and the head.
    series = admin.get("/api/v1/series", params={"id": done["series"]["id"]}).json()
    assert len(series["points"]) == 9
    # The alerts page links the bisection's commits and the confirmation job.
    page = admin.get("/alerts?state=all").text
    assert f'href="/api/v1/jobs/{done["confirm_job_id"]}"' in page
    bisection = page.split('<p class="bisect">', 1)[1].split("</p>", 1)[0]
    assert bisection.startswith("bisection done between ")
    for label, says in (("p2", "(good)"), ("p3", "(bad)"), ("p1", "(good, ")):
        assert f"/commits/{sha_for(label)}" in bisection and says in bisection


def test_every_page_shows_the_regression_at_the_first_bad_commit(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    """The bisected commit has no run of its own; the pages show the regression there, and the
    measured head says it inherits it."""
    _, alert = bisected(server, engine, admin, first_bad="p3", broken="")
    bad, head = sha_for("p3"), sha_for("head")
    found = admin.get(f"/commits/{bad}.json").json()
    (here,) = found["found_here"]
    assert (here["alert_id"], here["good"], here["head"]) == (alert["id"], sha_for("p2"), head)
    assert here["change"] == pytest.approx(0.08, abs=0.01) and here["base"] == sha_for("c7")
    page = admin.get(f"/commits/{bad}").text
    assert "Found here by bisection" in page and "1 regressed, bisected here" in page
    assert "No run has results" not in page and "no verdicts" not in page
    assert f"/compare?base={sha_for('c7')}&amp;head={head}" in page
    measured = admin.get(f"/commits/{head}.json").json()
    assert measured["bisected"] == {bad: 1} and "regressed" not in measured["verdict_counts"]
    (row,) = [r for r in measured["rows"] if r["series_id"] == alert["series"]["id"]]
    assert row["bisected_to"] == bad
    assert f"regressed since {bad[:7]}, bisected" in admin.get(f"/commits/{head}").text
    (newest, *_) = admin.get("/index.json").json()["recent_runs"]
    assert newest["sha"] == head and newest["bisected"] == {bad: 1}
    assert "regressed" not in newest["verdicts"]
    overview = admin.get("/").text
    assert f"1 regressed since {bad[:7]}, bisected" in overview
    assert "regressed, bisected earlier" in overview  # the head's bar holds it, hatched
    trend = admin.get("/trends.json", params={"series": alert["series"]["id"]}).json()
    (marker,) = trend["alerts"]
    assert (marker["commit"], marker["measured_at"]) == (bad, head)
    figure = admin.get("/trends", params={"series": alert["series"]["id"]}).text
    assert "bisected here from" in figure and '"x":[7.5]' in figure.replace(" ", "")
    # Once later commits hold the new level, the change point at the measured head is named,
    # in the trends' table, by where it came in, as the alert names it.
    line = [*(f"c{i}" for i in range(8)), "head"]  # the head was stored on the c line
    for i in range(3):
        later = document(commit=f"later{i}", parents=line[-1:], ancestors=line[::-1],
                         minutes=21 + i, medians={"gemm_bias_act_fwd": 108.0},
                         seed=90 + i)  # fmt: skip
        answer = admin.post("/api/v1/runs", json=later)
        assert answer.status_code == 201, answer.text
        line.append(f"later{i}")

    def shifts() -> list[dict]:
        return admin.get("/trends.json", params={"series": alert["series"]["id"]}).json()[
            "series"][0]["change_points"]  # fmt: skip

    wait_for(lambda: bool(shifts()), timeout=30)
    (shift,) = shifts()
    assert (shift["commit"], shift["bisected_to"]) == (head, bad)
    table = admin.get("/trends", params={"series": alert["series"]["id"]}).text
    assert f"(measured at {head[:7]}; a bisection found it came in at {bad[:7]})" in table
    # The REST API tells the same, from the same read: which kernels regressed at the first bad
    # commit and why, in one call; the measured head's counts without it.
    api = admin.get(f"/api/v1/commits/{bad}/metrics").json()
    (told,) = api["alerts"]
    assert (told["role"], told["id"], told["first_bad_commit"]) == (
        "started here (bisection)", alert["id"], bad)  # fmt: skip
    assert told["summary"] == alert["summary"] and told["series"]["id"] == alert["series"]["id"]
    assert api["found_here"][0]["alert_id"] == alert["id"] and api["branch"] == "main"
    at_head = admin.get(f"/api/v1/commits/{head}/metrics").json()
    assert at_head["bisected"] == {bad: 1}
    assert at_head["verdict_counts"] == measured["verdict_counts"]
    (told,) = at_head["alerts"]
    assert told["role"] == "opened here, bisected to an earlier commit"
    (metric,) = [m for w in at_head["workloads"] for k in w["kernels"] for m in k["metrics"]
                 if m["series_id"] == alert["series"]["id"]]  # fmt: skip
    assert metric["bisected_to"] == bad


def bisected_at_levels(
    server: LiveServer, engine: Engine, admin: httpx.Client, levels: dict[str, float]
) -> tuple[list[str], dict]:
    """A head 30% slower, confirmed, and its bisection served with each pushed commit at its
    `levels` median against its good neighbour's 100."""
    labels = history(admin)
    queue_head(engine, PUSH)
    with server.client(runner_token(engine)) as runner:
        post_head(runner, labels, "head", median=130.0)
        confirm(runner, median=130.0)
        (alert,) = admin.get("/api/v1/alerts").json()
        return bisect_run(runner, "p3", "", alert["id"], levels=levels)


def test_a_small_slowdown_under_a_large_regression_is_not_its_first_bad_commit(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    """The head is 30% slower; p2 is 3% slower than the base, really (or a loaded host's noise),
    and p3 brings the rest. p2, measured slower against its good neighbour, still carries far
    less than half the regression, so the bisection goes on past it to p3."""
    levels = {"p1": 100.0, "p2": 103.0, "p3": 130.0, "p4": 130.0, "p5": 130.0}
    tested, done = bisected_at_levels(server, engine, admin, levels)
    assert tested == ["p3", "p1", "p2"]
    p2 = done["bisect"]["tested"][sha_for("p2")]
    assert p2["change"] == pytest.approx(0.03, abs=0.01) and p2["p_value"] < 0.01
    assert p2["bad"] is False
    assert done["first_bad_commit"] == sha_for("p3")
    assert done["bisect"]["good"] == sha_for("p2")


def test_a_regression_in_two_steps_is_bisected_to_the_step_that_crosses_half(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    """p1 brings 10% of the head's 30%, p2 another 5% over p1: short of half each against its
    good neighbour, but p2 stands 15.5% above the base, past half the regression (14% on a log
    scale), so p2 is the first bad commit, not p3."""
    levels = {"p1": 110.0, "p2": 105.0, "p3": 130.0, "p4": 130.0, "p5": 130.0}
    tested, done = bisected_at_levels(server, engine, admin, levels)
    assert tested == ["p3", "p1", "p2"]
    verdicts = {s: t["bad"] for s, t in done["bisect"]["tested"].items()}
    assert verdicts == {sha_for("p3"): True, sha_for("p1"): False, sha_for("p2"): True}
    assert done["first_bad_commit"] == sha_for("p2")
    assert done["bisect"]["good"] == sha_for("p1")


def test_a_push_of_one_commit_is_not_bisected(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    labels = history(admin)
    queue_head(engine, ["head"])
    with server.client(runner_token(engine)) as runner:
        post_head(runner, labels, "head")
        confirm(runner)
        assert runner.post("/api/v1/jobs/claim").status_code == 204
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["bisect"] == {}
    assert alert["first_bad_commit"] is None
    with engine.connect() as conn:
        assert conn.execute(select(Job).where(Job.kind == "bisect")).all() == []


def test_the_head_right_after_the_base_is_the_first_bad_commit(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    labels = history(admin)
    # The push's earlier commits are the base and before: no commit left to test.
    queue_head(engine, ["c6", labels[-1], "head"])
    with server.client(runner_token(engine)) as runner:
        post_head(runner, labels, "head")
        confirm(runner)
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["first_bad_commit"] == sha_for("head")
    assert alert["bisect"]["state"] == "done"
    assert alert["bisect"]["tested"] == {}


@pytest.fixture
def hook(settings: Settings) -> Iterator[Hook]:
    with _server(settings) as live, live.client() as client:
        yield Hook(client)


def test_a_push_of_several_commits_stores_them_in_the_head_job(hook: Hook, engine: Engine) -> None:
    pushed = [sha_for("a"), sha_for("b"), sha_for("c")]
    assert hook.send(push_payload(after=pushed[-1], commits=pushed)).status_code == 202
    assert hook.send(push_payload(after=sha_for("d"))).status_code == 202
    with engine.connect() as conn:
        jobs = conn.execute(select(Job.commit_sha, Job.payload).order_by(Job.id)).all()
    assert [tuple(j) for j in jobs] == [
        (pushed[-1], {"push_commits": pushed}),
        (sha_for("d"), {}),
    ]


def bisect_run(
    runner: httpx.Client, first_bad: str, broken: str, alert_id: int,
    levels: dict[str, float] | None = None,
) -> tuple[list[str], dict]:  # fmt: skip
    """Serve the bisect jobs: commits from `first_bad` on are slower (or each at its `levels`
    median against the good commit's 100), `broken` does not build."""
    by_sha = {sha_for(p): p for p in PUSH}
    tested: list[str] = []
    for step in range(10):
        answer = runner.post("/api/v1/jobs/claim")
        if answer.status_code == 204:
            break
        claim = answer.json()
        label = by_sha[claim["job"]["commit"]]
        tested.append(label)
        slow = PUSH.index(label) >= PUSH.index(first_bad)
        median = levels[label] if levels else 108.0 if slow else 100.0
        doc = paired(claim, label, median, 200 + 2 * step)
        if label == broken:
            doc.update(status="build_failed", workloads=[])
            doc["build"].update(status="failed", log_tail="error: identifier undefined", kernels=[])
        answer = runner.post("/api/v1/runs", json=doc)
        assert answer.status_code == 201, answer.text
    return tested, runner.get(f"/api/v1/alerts/{alert_id}").json()


def bisected(
    server: LiveServer, engine: Engine, admin: httpx.Client, first_bad: str, broken: str
) -> tuple[list[str], dict]:
    """A history, the head of PUSH regressed and confirmed, and its bisection served to the end
    (bisect_run): the commits tested and the alert as it ends."""
    labels = history(admin)
    queue_head(engine, PUSH)
    with server.client(runner_token(engine)) as runner:
        post_head(runner, labels, "head")
        confirm(runner)
        (alert,) = admin.get("/api/v1/alerts").json()
        return bisect_run(runner, first_bad=first_bad, broken=broken, alert_id=alert["id"])


def test_a_commit_that_does_not_build_is_skipped_and_can_leave_the_answer_open(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    tested, done = bisected(server, engine, admin, first_bad="p3", broken="p3")
    # p3 is skipped; p2 is good and p4 bad, so the regression is in p3 or p4.
    assert tested == ["p3", "p2", "p4"]
    state = done["bisect"]
    assert state["state"] == "done"
    assert state["tested"][sha_for("p3")] == {"skipped": True, "reason": "the build failed"}
    assert state["first_bad"] is None
    assert state["first_bad_candidates"] == [sha_for("p3"), sha_for("p4")]
    assert done["first_bad_commit"] is None
    assert done["events"][-1]["note"].startswith("bisected: the first bad commit is one of")


def test_a_skipped_commit_outside_the_final_range_leaves_a_clear_answer(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    tested, done = bisected(server, engine, admin, first_bad="p5", broken="p3")
    assert tested == ["p3", "p2", "p4", "p5"]
    assert done["first_bad_commit"] == sha_for("p5")
    assert done["bisect"]["first_bad"] == sha_for("p5")
    assert done["bisect"]["skipped"] == [sha_for("p3")]
