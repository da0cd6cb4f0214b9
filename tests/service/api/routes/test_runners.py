"""The runner routes (service.api.routes.runners) over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from service.store.jobs import runners
from tests.conftest import ADMIN_TOKEN
from tests.documents import sha_for
from tests.live_server import LiveServer
from tests.service.store.jobs.test_queue import make_runner

ROUTES = ("/api/v1/runners/register", "/api/v1/runners/heartbeat", "/api/v1/runners/health")
UNHEALTHY = {"healthy": False, "reason": "  nvidia-smi failed  "}


@pytest.fixture
def token(engine: Engine) -> str:
    return make_runner(engine, "gpu-1", {"gpu": "h100"})


@pytest.fixture
def runner(server: LiveServer, token: str) -> Iterator[httpx.Client]:
    with server.client(token) as c:
        yield c


@pytest.fixture
def admin_queue(server: LiveServer) -> None:
    """One job queued for any runner."""
    with server.client(ADMIN_TOKEN) as admin:
        answer = admin.post(
            "/api/v1/jobs", json={"repository": "acme/kernels", "sha": sha_for("a")}
        )
    assert answer.status_code == 201, answer.text


def listed(server: LiveServer) -> list[dict]:
    with server.client() as anyone:  # reads are open on this server
        answer = anyone.get("/api/v1/runners")
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_runners_are_listed_by_name_as_their_tokens_made_them(
    server: LiveServer, engine: Engine, token: str
) -> None:
    make_runner(engine, "a100-b")
    assert [r["name"] for r in listed(server)] == ["a100-b", "gpu-1"]
    fresh = listed(server)[1]
    assert fresh == {
        "name": "gpu-1", "host": "", "labels": {"gpu": "h100"}, "reported_labels": {},
        "claims_by": {"gpu": "h100", "runner": "gpu-1"}, "last_seen_at": None,
        "current_job_id": None, "revoked": False, "environment": {}, "healthy": True,
        "unhealthy_since": None, "unhealthy_reason": "",
    }  # fmt: skip
    with Session(engine) as session, session.begin():
        runners.revoke_token(session, "a100-b")
    assert [r["revoked"] for r in listed(server)] == [True, False]
    with server.client() as anyone:
        refused = anyone.get("/api/v1/runners", params={"name": "gpu-1"})
    assert refused.status_code == 400
    assert refused.json()["detail"] == "unknown query parameter 'name'; /api/v1/runners takes: none"


def test_a_registration_records_the_host_and_what_the_runner_reports(
    server: LiveServer, runner: httpx.Client
) -> None:
    body = {"host": "node7", "labels": {"gpu": "h100", "arch": "sm_90"},
            "environment": {"driver": "550.54", "gpus": [{"name": "H100"}]}}  # fmt: skip
    answer = runner.post("/api/v1/runners/register", json=body)
    assert answer.status_code == 200, answer.text
    me = answer.json()
    assert (me["name"], me["host"], me["environment"]) == ("gpu-1", "node7", body["environment"])
    assert me["reported_labels"] == {"gpu": "h100", "arch": "sm_90"}
    # What a runner reports narrows what its token claims, never widens it.
    assert (me["labels"], me["claims_by"]) == ({"gpu": "h100"}, {"gpu": "h100", "runner": "gpu-1"})
    assert me["last_seen_at"] is not None and me["healthy"] is True
    assert listed(server) == [me]


def test_a_registration_it_cannot_take_is_a_422_and_records_nothing(
    server: LiveServer, runner: httpx.Client
) -> None:
    deep: dict = {"leaf": 1}
    for _ in range(16):
        deep = {"x": deep}
    for body, says in [
        ({"environment": deep}, "body.environment: Value error, nests deeper than 16 levels"),
        ({"labels": {"bad label": "x"}}, "body.labels.bad label.[key]"),
        ({"labels": {f"k{i}": "v" for i in range(11)}}, "11 labels; at most 10"),
        ({"host": "h" * 301}, "body.host"),
        ({"host": "node7", "token": "x"}, "body.token"),
    ]:
        answer = runner.post("/api/v1/runners/register", json=body)
        assert answer.status_code == 422, answer.text
        assert says in answer.json()["detail"], body
    (me,) = listed(server)
    assert (me["host"], me["last_seen_at"], me["environment"]) == ("", None, {})


def test_a_heartbeat_says_when_the_runner_was_last_seen(
    server: LiveServer, runner: httpx.Client
) -> None:
    first = runner.post("/api/v1/runners/heartbeat")
    assert first.status_code == 200, first.text
    assert first.json()["name"] == "gpu-1"
    seen = datetime.fromisoformat(first.json()["last_seen_at"])
    second = datetime.fromisoformat(runner.post("/api/v1/runners/heartbeat").json()["last_seen_at"])
    assert second > seen
    assert listed(server)[0]["last_seen_at"] == second.isoformat().replace("+00:00", "Z")


def test_an_unhealthy_runner_is_given_no_job_until_it_registers(
    admin_queue: None, server: LiveServer, runner: httpx.Client
) -> None:
    sick = runner.post("/api/v1/runners/health", json=UNHEALTHY)
    assert sick.status_code == 200, sick.text
    body = sick.json()
    assert (body["healthy"], body["unhealthy_reason"]) == (False, "nvidia-smi failed")
    since = body["unhealthy_since"]
    assert since is not None
    # A second report keeps when it began, and says what is wrong now.
    worse = runner.post("/api/v1/runners/health", json={"healthy": False, "reason": "ECC errors"})
    assert (worse.json()["unhealthy_since"], worse.json()["unhealthy_reason"]) == (
        since, "ECC errors"
    )  # fmt: skip
    refused = runner.post("/api/v1/jobs/claim")
    assert refused.status_code == 409
    assert "that its host cannot run jobs (ECC errors)" in refused.json()["detail"]
    healthy = runner.post("/api/v1/runners/register", json={"host": "node7"}).json()
    assert (healthy["healthy"], healthy["unhealthy_since"], healthy["unhealthy_reason"]) == (
        True, None, ""
    )  # fmt: skip
    assert runner.post("/api/v1/jobs/claim").status_code == 200
    runner.post("/api/v1/runners/health", json=UNHEALTHY)
    assert runner.post("/api/v1/runners/health", json={"healthy": True}).json()["healthy"] is True


def test_a_health_report_it_cannot_take_is_a_422(server: LiveServer, runner: httpx.Client) -> None:
    for body, says in [
        ({"healthy": False}, "reason: say what is wrong with the host"),
        ({"healthy": False, "reason": "   "}, "reason: say what is wrong with the host"),
        ({"reason": "x"}, "body.healthy: Field required"),
        ({"healthy": False, "reason": "x" * 2001}, "body.reason"),
        ({"healthy": True, "since": "now"}, "body.since"),
    ]:
        answer = runner.post("/api/v1/runners/health", json=body)
        assert answer.status_code == 422, answer.text
        assert says in answer.json()["detail"], body
    assert listed(server)[0]["healthy"] is True


def test_the_runner_routes_take_a_live_runner_token_alone(
    server: LiveServer, engine: Engine, token: str
) -> None:
    bodies = {ROUTES[0]: {}, ROUTES[1]: None, ROUTES[2]: {"healthy": True}}
    for given, says in [
        (None, "missing 'Authorization: Bearer <token>' header"),
        (ADMIN_TOKEN, "not a valid runner token"),
        (token[:-1], "not a valid runner token"),
    ]:
        with server.client(given) as client:
            for path, body in bodies.items():
                answer = client.post(path, json=body)
                assert answer.status_code == 401, (path, given)
                assert says in answer.json()["detail"], (path, given)
    with Session(engine) as session, session.begin():
        runners.revoke_token(session, "gpu-1")
    with server.client(token) as revoked:
        answer = revoked.post(ROUTES[1])
    assert answer.status_code == 401
    assert answer.json()["detail"] == "the token of runner 'gpu-1' was revoked"
    assert listed(server)[0]["last_seen_at"] is None
