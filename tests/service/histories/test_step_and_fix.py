"""Verdicts along real histories, through the real service over HTTP, on SQLite and PostgreSQL.

A 92 us series steps up by 6%; six innocent commits follow on the new level; a fix brings it
back; two more commits follow. Beside it, two series that never change. Every commit must get
the verdict a person expects: exactly one regression (at the step), nothing on the innocent
commits, one improvement at the fix, and the alert closed as fixed by the fix. The same holds
for a burst of 120 commits posted at once in any order (and posted again), which must also give
the same verdicts and change points as the same commits posted one by one, and for a step that
arrives in a push of three commits (the head is measured, the push bisected).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import Engine, func, or_, select
from sqlalchemy.orm import Session

from service.core.settings import Settings
from service.core.tokens import new_token, token_hash
from service.models import Run, Runner
from tests.conftest import ADMIN_TOKEN
from tests.history import LONG, MID, Line
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import SECRET, Hook, _server, push_payload
from tests.service.evaluation.alerts.test_lifecycle import runner_token

STEPPED, STEADY, MID_STEADY = "stepped", "steady", "steady_mid"
BASE = {STEPPED: 92.0, STEADY: 250.0, MID_STEADY: 30.0}
KERNELS = {STEPPED: LONG, STEADY: LONG, MID_STEADY: MID}
STEP = 1.06


def levels(stepped: bool) -> dict[str, float]:
    return {**BASE, STEPPED: BASE[STEPPED] * (STEP if stepped else 1.0)}


def step_and_fix(n: int, step: int, fix: int) -> list[dict[str, float]]:
    return [levels(step <= i < fix) for i in range(n)]


@pytest.fixture
def live(settings: Settings) -> Iterator[LiveServer]:
    """The service as deployed: verdicts decided after the answer, by its own worker."""
    with _server(settings, analyse_in_request=False, analysis_delay_seconds=0.2) as server:
        yield server


@pytest.fixture
def admin(live: LiveServer) -> Iterator[httpx.Client]:
    with live.client(ADMIN_TOKEN) as client:
        yield client


def settle(engine: Engine, timeout: float = 120) -> None:
    """Until no stored run waits for its verdicts or change points."""
    deadline = time.monotonic() + timeout
    waiting = select(func.count()).where(
        or_(Run.analysed_at.is_(None), Run.change_points_at.is_(None))
    )
    while True:
        with engine.connect() as conn:
            if not conn.execute(waiting).scalar_one():
                return
        assert time.monotonic() < deadline, "the analysis backlog did not settle"
        time.sleep(0.1)


def metrics_at(client: httpx.Client, line: Line, i: int) -> dict[str, dict]:
    body = client.get(f"/api/v1/commits/{line.sha(i)}/metrics").json()
    assert not body["analysis_pending"] and not body["change_points_pending"], body
    return {
        k["kernel"]: k["metrics"][0]
        for w in body["workloads"]
        for k in w["kernels"]
        if k["metrics"]
    }


def verdicts(client: httpx.Client, line: Line, n: int) -> list[dict[str, str]]:
    return [
        {kernel: m["verdict"] for kernel, m in metrics_at(client, line, i).items()}
        for i in range(n)
    ]


def decisions(client: httpx.Client, line: Line, n: int) -> list[dict[str, tuple]]:
    """What could differ between two arrival orders: verdict, change, baseline segment."""
    index = {line.sha(i): i for i in range(n)}
    out = []
    for i in range(n):
        row = {}
        for kernel, m in metrics_at(client, line, i).items():
            analysis, base = m["analysis"], m["baseline"]
            start = base["segment"]["start_commit"] if base and base["segment"] else None
            start = index.get(start)  # the same commit of another repository's line
            change = round(analysis["change"], 12) if analysis["change"] is not None else None
            row[kernel] = (m["verdict"], change, start, base["results"] if base else 0)
        out.append(row)
    return out


def change_points(client: httpx.Client, line: Line, kernel: str) -> list[tuple[str, float]]:
    body = client.get(
        "/api/v1/series",
        params={"repository": line.repository, "kernel": kernel, "metric": "duration"},
    ).json()
    return [(cp["commit"], cp["change"]) for cp in body["change_points"]]


def assert_step_fix_story(got: list[dict[str, str]], step: int, fix: int) -> None:
    """One regression at the step, one improvement at the fix, nothing else changes."""
    for i, row in enumerate(got):
        expected = "new" if i == 0 else "unchanged"
        if i == step:
            expected = "regressed"
        elif i == fix:
            expected = "improved"
        assert row[STEPPED] == expected, (i, row)
        for kernel in (STEADY, MID_STEADY):
            assert row[kernel] == ("new" if i == 0 else "unchanged"), (i, row)


class FakeRunner:
    """Claims jobs over HTTP as a runner agent would and posts what the line says a real run
    would have measured: run jobs, confirmations and bisections (base and head interleaved)."""

    def __init__(
        self,
        client: httpx.Client,
        line: Line | list[Line],
        at: Callable[[int], dict],
        code: Callable[[int], dict] | None = None,
    ) -> None:
        """`at`: what a run of commit i measures; `code`: what base and head interleaved
        measure (its code's level, without a whole run's offset; default `at`)."""
        self.client, self.at, self.code = client, at, code or at
        lines = line if isinstance(line, list) else [line]
        self.index = {each.sha(i): (each, i) for each in lines for i in range(1000)}
        self.done: list[tuple[str, int]] = []

    def work(self) -> None:
        """Every job the queue holds, until it is empty."""
        while (answer := self.client.post("/api/v1/jobs/claim")).status_code == 200:
            claim = answer.json()
            job = claim["job"]
            line, head = self.index[job["commit"]]
            if job["kind"] == "run":
                doc = line.document(head, self.at(head))
            else:
                _, base = self.index[job["payload"]["base_sha"]]
                doc = line.paired(head, base, {head: self.code(head), base: self.code(base)})
            doc["job_id"], doc["lease_token"] = job["id"], claim["attempt_token"]
            posted = self.client.post("/api/v1/runs", json=doc)
            assert posted.status_code == 201, posted.text
            self.done.append((job["kind"], head))
        assert answer.status_code == 204, answer.text


def test_a_step_its_innocent_successors_and_the_fix_posted_one_by_one(
    live: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    line = Line(KERNELS)
    step, fix, n = 10, 17, 20
    at = step_and_fix(n, step, fix)
    runner = None
    for i in range(n):
        assert admin.post("/api/v1/runs", json=line.document(i, at[i])).status_code == 201
        settle(engine)
        if i == step:
            with live.client(runner_token(engine)) as client:
                runner = FakeRunner(client, line, lambda j: at[j])
                runner.work()  # the confirmation: base and head interleaved
            settle(engine)
    assert runner is not None and runner.done == [("confirm", step)]
    got = verdicts(admin, line, n)
    assert_step_fix_story(got, step, fix)
    (listed,) = admin.get("/api/v1/alerts").json()
    alert = admin.get(f"/api/v1/alerts/{listed['id']}").json()
    assert alert["state"] == "fixed"
    assert alert["commit"] == line.sha(step)
    assert alert["fixed_by_commit"] == line.sha(fix)
    events = [(e["to_state"], e["actor"]) for e in alert["events"]]
    assert events == [("suspected", "kernelwatch"), ("open", "runner h100-a"),
                      ("fixed", "kernelwatch")]  # fmt: skip
    assert f"fixed by {line.sha(fix)[:12]}" in alert["events"][-1]["note"]
    # An innocent commit after the step is green, and says why: its baseline starts at the step.
    after = metrics_at(admin, line, step + 3)[STEPPED]
    assert after["verdict"] == "unchanged"
    segment = after["baseline"]["segment"]
    assert segment["start_commit"] == line.sha(step)
    assert segment["kind"] == "regression"
    assert after["baseline"]["results"] == 3
    assert after["baseline"]["median"] == pytest.approx(BASE[STEPPED] * STEP, rel=0.003)
    assert abs(after["change"]) < 0.005
    assert f"a regression at {line.sha(step)[:12]}" in segment["reason"]
    # The fix is measured against the regressed level; after it, the fixed level is the base.
    fixed = metrics_at(admin, line, fix)[STEPPED]
    assert fixed["baseline"]["segment"]["start_commit"] == line.sha(step)
    assert fixed["change"] == pytest.approx(1 / STEP - 1, abs=0.005)
    later = metrics_at(admin, line, fix + 2)[STEPPED]["baseline"]["segment"]
    assert (later["start_commit"], later["kind"]) == (line.sha(fix), "fixed")
    # Before the step nothing had shifted: the baseline is the history read.
    early = metrics_at(admin, line, step - 1)[STEPPED]["baseline"]["segment"]
    assert (early["start_commit"], early["kind"]) == (line.sha(0), "history")
    # The commit page shows the same.
    page = admin.get(f"/commits/{line.sha(step + 3)}").text
    assert f'since <a href="/commits/{line.sha(step)}' in page


def test_a_burst_of_120_in_any_order_decides_as_one_by_one(
    live: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    step, fix, n = 40, 80, 120
    at = step_and_fix(n, step, fix)
    ordered = Line(KERNELS, repository="acme/one-by-one", seed=5)
    for i in range(n):
        assert admin.post("/api/v1/runs", json=ordered.document(i, at[i])).status_code == 201
        if i % 10 == 9:
            settle(engine)
    settle(engine)
    burst = Line(KERNELS, repository="acme/burst", seed=5)  # the same measurements
    shuffled = list(range(n))
    random.Random(7).shuffle(shuffled)

    def post(i: int) -> int:
        return senders.post("/api/v1/runs", json=burst.document(i, at[i])).status_code

    with live.senders(ADMIN_TOKEN) as senders, ThreadPoolExecutor(8) as pool:
        assert set(pool.map(post, shuffled[:80])) == {201}
        settle(engine)  # the rest arrive later still: their descendants are decided again
        assert set(pool.map(post, shuffled[80:])) == {201}
        settle(engine)
        assert set(pool.map(post, shuffled)) == {200}  # posted again: nothing changes
    settle(engine)
    got = verdicts(admin, burst, n)
    assert_step_fix_story(got, step, fix)
    assert decisions(admin, burst, n) == decisions(admin, ordered, n)
    for line in (ordered, burst):
        found = change_points(admin, line, STEPPED)
        assert [sha for sha, _ in found] == [line.sha(step), line.sha(fix)], found
        assert found[0][1] == pytest.approx(STEP - 1, abs=0.004)
        assert found[1][1] == pytest.approx(1 / STEP - 1, abs=0.004)
        assert change_points(admin, line, STEADY) == []
    # The confirmation comes back after the fix was in: the alert opens and closes as fixed.
    with live.client(runner_token(engine)) as client:
        FakeRunner(client, [ordered, burst], lambda j: at[j]).work()
    for line in (ordered, burst):
        (alert,) = admin.get("/api/v1/alerts", params={"repository": line.repository}).json()
        assert (alert["state"], alert["commit"]) == ("fixed", line.sha(step))
        assert alert["fixed_by_commit"] == line.sha(fix)


def test_a_step_inside_a_push_of_three_commits(settings: Settings, engine: Engine) -> None:
    line = Line(KERNELS)
    step, fix, n = 11, 19, 22  # the push is commits 10, 11, 12: 11 is the step, 12 measured
    at = step_and_fix(n, step, fix)
    pushes = [[i] for i in range(10)] + [[10, 11, 12]] + [[i] for i in range(13, n)]
    token = new_runner(engine, "h100-a")
    overrides = {"webhook_secret": SECRET, "analyse_in_request": False}
    with (
        _server(settings, analysis_delay_seconds=0.2, **overrides) as live,
        live.client(ADMIN_TOKEN) as admin,
        live.client(token) as client,
    ):
        hook, runner = Hook(admin), FakeRunner(client, line, lambda j: at[j])
        for push in pushes:
            payload = push_payload(after=line.sha(push[-1]), commits=[line.sha(i) for i in push])
            assert hook.send(payload).status_code == 202
            runner.work()  # the push's head
            settle(engine)
            runner.work()  # a confirmation, then the bisection's steps, one at a time
            settle(engine)
            runner.work()
            settle(engine)
        assert [j for j in runner.done if j[0] != "run"] == [
            ("confirm", 12),
            ("bisect", 10),
            ("bisect", 11),
        ], runner.done
        measured = [p[-1] for p in pushes]
        for i in measured:
            row = {k: m["verdict"] for k, m in metrics_at(admin, line, i).items()}
            expected = {0: "new", 12: "regressed", fix: "improved"}.get(i, "unchanged")
            assert row[STEPPED] == expected, (i, row)
            assert row[STEADY] == ("new" if i == 0 else "unchanged"), (i, row)
        (alert,) = admin.get("/api/v1/alerts").json()
        assert alert["commit"] == line.sha(12)
        assert alert["bisect"]["state"] == "done", alert["bisect"]
        assert alert["first_bad_commit"] == line.sha(step)
        assert (alert["state"], alert["fixed_by_commit"]) == ("fixed", line.sha(fix))


def new_runner(engine: Engine, name: str) -> str:
    """A registered runner and its token, as `kernelwatch runner-token create` makes them."""
    token = new_token("kwr")
    with Session(engine) as session, session.begin():
        session.add(Runner(name=name, host="gpu-host", labels={}, token_hash=token_hash(token)))
    return token


def test_a_persons_call_on_an_alert_moves_the_baseline_as_it_says(
    live: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    """Acknowledged: the regressed level is accepted. Marked fixed by hand: the level from the
    newest commit on is. A regression the confirmation did not reproduce starts nothing."""
    line = Line(KERNELS)
    at = [levels(i >= 6) for i in range(14)]
    at[3] = {**BASE, STEPPED: BASE[STEPPED] * 1.03}  # one slow run, never reproduced

    def measured(i: int) -> dict:
        return at[i]

    with live.client(new_runner(engine, "h100-a")) as client:
        runner = FakeRunner(client, line, measured)
        for i in range(14):
            assert admin.post("/api/v1/runs", json=line.document(i, at[i])).status_code == 201
            settle(engine)
            if i == 3:
                at[3] = BASE  # the interleaved re-run does not see it: dismissed
                runner.work()
                settle(engine)
            if i == 6:
                runner.work()  # the real step: confirmed, open
                settle(engine)
            if i == 8:
                (alert,) = admin.get("/api/v1/alerts", params={"state": "open"}).json()
                patch = {"state": "acknowledged", "actor": "ada", "note": "expected: more work"}
                assert admin.patch(f"/api/v1/alerts/{alert['id']}", json=patch).status_code == 200
            if i == 11:
                patch = {"state": "fixed", "actor": "ada", "note": "accepted as it is now"}
                assert admin.patch(f"/api/v1/alerts/{alert['id']}", json=patch).status_code == 200
    dismissed = [a for a in admin.get("/api/v1/alerts").json() if a["state"] == "dismissed"]
    assert [a["commit"] for a in dismissed] == [line.sha(3)]
    after_blip = metrics_at(admin, line, 5)[STEPPED]
    assert after_blip["verdict"] == "unchanged"
    assert after_blip["baseline"]["segment"]["kind"] == "history"  # the blip started nothing
    acked = metrics_at(admin, line, 9)[STEPPED]["baseline"]["segment"]
    assert (acked["start_commit"], acked["kind"]) == (line.sha(6), "acknowledged")
    assert "acknowledged by ada" in acked["reason"]
    by_hand = metrics_at(admin, line, 12)[STEPPED]["baseline"]["segment"]
    assert (by_hand["start_commit"], by_hand["kind"]) == (line.sha(11), "fixed")
    assert "closed by ada" in by_hand["reason"]
    got = verdicts(admin, line, 14)
    # The blip the interleaved rerun did not reproduce is unchanged, the rerun its reason.
    assert [row[STEPPED] for row in got] == ["new", *["unchanged"] * 5, "regressed",
                                            *["unchanged"] * 7]  # fmt: skip
    blip = metrics_at(admin, line, 3)[STEPPED]["analysis"]["note"]
    assert blip.startswith("unchanged: the interleaved rerun of base and head"), blip
