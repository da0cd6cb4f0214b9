"""The alerts of a commit and what they say of it (service.evaluation.reads.commit_alerts): on
plain alerts, the regressions a bisection found at a commit (the change its tested step measured
there, else the alert's own), those measured at a head that came in earlier (series -> first bad
commit) and how many each first bad commit took; and through a real server on SQLite and
PostgreSQL, each alert a commit opened or fixed with its role, and its verdict counts as given
where nothing was bisected away."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.evaluation.reads.commit_alerts import (
    ALERT_FIELDS,
    FOUND_HERE,
    MOVED_AWAY,
    by_first_bad,
    commit_alerts,
    found_here,
    moved_away,
)
from service.models import Commit
from service.schemas.alerts import AlertPublic
from service.schemas.metrics import SeriesPublic
from tests.conftest import ADMIN_TOKEN
from tests.documents import sha_for
from tests.live_server import LiveServer
from tests.service.evaluation.alerts.test_measure_alerts import STEADY, post, steady_line

GOOD, BAD, HEAD = "a" * 40, "b" * 40, "c" * 40


def alert(alert_id: int, series: int, **fields: Any) -> AlertPublic:
    now = datetime(2026, 11, 1, tzinfo=UTC)
    plain = {
        "id": alert_id, "state": "open", "summary": "s", "change": 0.1, "confirmed_change": None,
        "series": SeriesPublic(id=series, repository="acme/kernels", suite="kernels",
                               workload="gemm_fwd", params={"act": "relu"}, kernel="k",
                               metric="duration", unit="us", method="cuda_events",
                               fingerprint="aa"),
        "branch": "main", "commit": HEAD, "base_commit": GOOD, "first_bad_commit": None,
        "fixed_by_commit": None, "confirm_job_id": None, "attribution": {}, "note": "",
        "updated_by": "kernelwatch", "created_at": now, "updated_at": now,
    }  # fmt: skip
    return AlertPublic(**(plain | fields))


def test_a_bisections_find_carries_the_change_its_step_measured_there() -> None:
    tested = {"bisect": {"good": GOOD, "tested": {BAD: {"change": 0.08, "p_value": 1e-4}}}}
    alerts = [
        alert(1, 10, first_bad_commit=BAD, confirmed_change=0.07, **tested),
        alert(2, 11, first_bad_commit=BAD, confirmed_change=0.07),  # no step measured here
        alert(3, 12),
    ]
    found = found_here(alerts, [FOUND_HERE, FOUND_HERE, "opened here"], BAD)
    assert [(f["alert_id"], f["change"], f["p_value"]) for f in found] == [
        (1, 0.08, 1e-4), (2, 0.07, None)]  # fmt: skip
    assert (found[0]["good"], found[0]["head"], found[0]["base"]) == (GOOD, HEAD, GOOD)


def test_regressions_bisected_away_are_counted_at_their_first_bad_commit() -> None:
    alerts = [alert(1, 10, first_bad_commit=BAD), alert(2, 11, first_bad_commit=BAD),
              alert(3, 12, first_bad_commit=GOOD), alert(4, 13)]  # fmt: skip
    moved = moved_away(alerts, [MOVED_AWAY, MOVED_AWAY, MOVED_AWAY, "opened here"])
    assert moved == {10: BAD, 11: BAD, 12: GOOD}
    assert by_first_bad(moved) == {BAD: 2, GOOD: 1}
    assert by_first_bad({}) == {}


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def test_a_commit_names_each_alert_it_opened_or_fixed_by_its_role(
    client: httpx.Client, engine: Engine
) -> None:
    line = steady_line(client)
    post(client, "grown", line, 1.5e9)
    post(client, "back", ["grown", *line], STEADY)
    with Session(engine) as session:
        commits = {c.sha: c for c in session.scalars(select(Commit))}
        opened = commit_alerts(session, commits[sha_for("grown")], {"unchanged": 1})
        fixed = commit_alerts(session, commits[sha_for("back")], {"unchanged": 1})
        quiet = commit_alerts(session, commits[sha_for("c0")], {"new": 1})
    (told,) = opened["alerts"]
    assert told["role"] == "opened here" and set(told) == {"role", *ALERT_FIELDS}
    assert (told["commit"], told["fixed_by_commit"]) == (sha_for("grown"), sha_for("back"))
    assert [a["role"] for a in fixed["alerts"]] == ["fixed here"]
    assert opened["verdict_counts"] == {"unchanged": 1}
    assert (opened["moved"], opened["bisected"], opened["found_here"]) == ({}, {}, [])
    assert quiet["alerts"] == []
