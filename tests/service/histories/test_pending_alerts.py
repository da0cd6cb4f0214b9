"""A pending verdict that the next run settles as a regression opens its alert at its own commit,
through the real service over HTTP on SQLite and PostgreSQL. On an H100 history (benchmarks/
results/history_h100_live, commits 9-10) the second step landed two runs after a fix (a level
too young to know its wander: pending); the next run, read against a segment that still held
the step, opened suspected alerts at itself, which kept the settled step from opening its own,
and were dismissed when that run was decided again: nine real regressions ended with no alert."""

from __future__ import annotations

import httpx
from sqlalchemy import Engine

from tests.history import LONG, Line
from tests.live_server import LiveServer
from tests.service.histories.test_step_and_fix import admin, live, metrics_at, settle  # noqa: F401

BASE = {"moved": 92.0, "steady": 250.0, "steady_b": 180.0}
# What "moved" is at each commit: a fix at 4 (-10%), the step at 6 (+10%) on a level of two.
MOVED = [1.1, 1.1, 1.1, 1.1, 1.0, 1.0, 1.1, 1.1, 1.1, 1.1]
STEP = 6


def test_a_pending_regression_settled_by_the_next_run_opens_its_alert_at_its_commit(
    live: LiveServer,  # noqa: F811
    engine: Engine,
    admin: httpx.Client,  # noqa: F811
) -> None:
    line = Line(dict.fromkeys(BASE, LONG), repository="acme/pending", seed=3)
    for i, moved in enumerate(MOVED):
        levels = {**BASE, "moved": BASE["moved"] * moved}
        assert admin.post("/api/v1/runs", json=line.document(i, levels)).status_code == 201
        settle(engine)
        if i == STEP:
            assert metrics_at(admin, line, i)["moved"]["verdict"] == "pending"
    got = [metrics_at(admin, line, i) for i in range(len(MOVED))]
    assert got[4]["moved"]["verdict"] == "improved"
    assert got[STEP]["moved"]["verdict"] == "regressed"
    for i in (*range(1, 4), 5, *range(STEP + 1, len(MOVED))):
        assert {k: m["verdict"] for k, m in got[i].items()} == dict.fromkeys(BASE, "unchanged"), i
    alerts = admin.get("/api/v1/alerts").json()
    live_alerts = [a for a in alerts if a["state"] != "dismissed"]
    assert [(a["commit"], a["series"]["kernel"]) for a in live_alerts] == [
        (line.sha(STEP), "moved")
    ], alerts
    assert live_alerts[0]["state"] == "suspected"  # no runner here to confirm it
    # The next run's own suspicion, dismissed when it was decided again, asks no runner for a
    # confirmation: its job is cancelled; the step's waits.
    jobs = admin.get("/api/v1/jobs", params={"repository": "acme/pending"}).json()
    confirms = {j["commit"]: j["state"] for j in jobs if j["kind"] == "confirm"}
    assert confirms[line.sha(STEP)] == "queued", jobs
    assert set(confirms.values()) <= {"queued", "cancelled"} and len(confirms) <= 2, jobs
    dismissed = [a for a in alerts if a["state"] == "dismissed"]
    assert all(a["commit"] == line.sha(STEP + 1) for a in dismissed), dismissed
    assert all(confirms.get(a["commit"]) == "cancelled" for a in dismissed), (dismissed, jobs)


def test_a_regression_that_arrives_after_its_next_commit_opens_its_alert_at_its_commit(
    live: LiveServer,  # noqa: F811
    engine: Engine,
    admin: httpx.Client,  # noqa: F811
) -> None:
    """The step's run arrives after the next commit's: that one, read without the step, opened
    a suspected alert at itself first; the step, when it comes, opens its own (the later
    commit's suspicion is not the step's), and the later one, decided again, drops its own."""
    line = Line(dict.fromkeys(BASE, LONG), repository="acme/late-step", seed=5)
    order = [*range(STEP), STEP + 1, STEP, *range(STEP + 2, len(MOVED))]
    for i in order:
        levels = {**BASE, "moved": BASE["moved"] * MOVED[i]}
        assert admin.post("/api/v1/runs", json=line.document(i, levels)).status_code == 201
        settle(engine)
    alerts = admin.get("/api/v1/alerts", params={"repository": "acme/late-step"}).json()
    live_alerts = [
        (a["commit"], a["series"]["kernel"]) for a in alerts if a["state"] != "dismissed"
    ]
    assert live_alerts == [(line.sha(STEP), "moved")], alerts
    assert metrics_at(admin, line, STEP)["moved"]["verdict"] in ("regressed", "pending")
