"""Who is calling (service.api.deps), through the real app: an admin route takes the admin token
alone, and says so where the server has none; a runner route takes a runner's token alone; a
route for either (a result document) takes both and tells the caller apart; every refusal is a
401 that says what to send, a missing header with a Bearer challenge. (A revoked runner token:
tests/hardening/test_access.py.)"""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine

from service.api.app import create_app
from service.core.settings import Settings
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer
from tests.service.store.jobs.test_queue import make_runner

ADMIN_ROUTE = ("POST", "/api/v1/jobs/1/cancel")
RUNNER_ROUTE = ("POST", "/api/v1/runners/heartbeat")
EITHER_ROUTE = ("POST", "/api/v1/runs")


def send(live: LiveServer, route: tuple[str, str], token: str | None) -> httpx.Response:
    method, path = route
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.request(method, f"{live.url}{path}", headers=headers, json={})


@pytest.mark.parametrize("route", [ADMIN_ROUTE, RUNNER_ROUTE, EITHER_ROUTE])
def test_no_authorization_header_is_a_401_with_a_bearer_challenge(
    server: LiveServer, route: tuple[str, str]
) -> None:
    answer = send(server, route, None)
    assert answer.status_code == 401
    assert answer.json()["detail"] == "missing 'Authorization: Bearer <token>' header"
    assert answer.headers["WWW-Authenticate"] == "Bearer"


def test_an_admin_route_takes_the_admin_token_alone(server: LiveServer, engine: Engine) -> None:
    runner = make_runner(engine, "gpu-1")
    for token in (runner, ADMIN_TOKEN[:-1], "x"):
        answer = send(server, ADMIN_ROUTE, token)
        assert answer.status_code == 401, token
        assert answer.json()["detail"] == "the bearer token is not valid"
    assert send(server, ADMIN_ROUTE, ADMIN_TOKEN).status_code == 404  # no job 1: let in


def test_without_an_admin_token_the_server_says_how_to_set_one(settings: Settings) -> None:
    settings.admin_token = None
    with LiveServer(create_app(settings, migrate=False)) as live:
        answer = send(live, ADMIN_ROUTE, "anything")
    assert answer.status_code == 401
    assert answer.json()["detail"] == (
        "this server has no admin token; set KERNELWATCH_ADMIN_TOKEN"
    )


def test_a_runner_route_takes_a_runners_token_alone(server: LiveServer, engine: Engine) -> None:
    runner = make_runner(engine, "gpu-1")
    for token in (ADMIN_TOKEN, runner[:-1]):
        answer = send(server, RUNNER_ROUTE, token)
        assert answer.status_code == 401
        assert answer.json()["detail"] == (
            "not a valid runner token; create one with `kernelwatch runner-token create NAME`"
        )
    beat = send(server, RUNNER_ROUTE, runner)
    assert beat.status_code == 200 and beat.json()["name"] == "gpu-1"


def test_a_route_for_either_takes_both_and_tells_them_apart(
    server: LiveServer, engine: Engine
) -> None:
    runner = make_runner(engine, "gpu-1")
    refused = send(server, EITHER_ROUTE, "x")
    assert refused.status_code == 401
    assert refused.json()["detail"] == (
        "the bearer token is neither the admin token nor a runner token"
    )
    doc = document(commit="a")
    with server.client(ADMIN_TOKEN) as admin:
        assert admin.post("/api/v1/runs", json=doc).status_code == 201
    # The same document from a runner must come under a job's lease: the caller is a runner.
    with server.client(runner) as client:
        answer = client.post("/api/v1/runs", json=document(commit="b"))
    assert answer.status_code == 409
    assert "job_id and lease_token" in answer.json()["detail"]
