"""Integers beyond 64 bits, anywhere in a body: stored, or a 422 naming where, never a 500
(SQLite and PostgreSQL): a runner's registration, a result document, a signed webhook payload.
Numbers up to 64 bits are stored as they are."""

from __future__ import annotations

import json

from sqlalchemy import Engine, func, select

from service.models import Run, Runner, WebhookDelivery
from service.schemas.text import LARGEST_INTEGER, unstorable_number
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import Hook, _server
from tests.service.histories.test_pull_requests import pr_event
from tests.service.store.jobs.test_queue import make_runner

WIDE = 225428226259614045306880  # 78 bits


def count(engine: Engine, model: type) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(model)).scalar_one()


def test_the_walk_names_the_first_wide_integer() -> None:
    assert (
        unstorable_number({"a": [1, {"b": WIDE}]})
        == "$.a[1].b: an integer beyond 64 bits (24 digits)"
    )
    assert unstorable_number({"a": LARGEST_INTEGER, "b": -(1 << 63), "c": True, "d": 1e300}) is None
    assert unstorable_number({"a": -(1 << 63) - 1}) is not None


def test_a_runners_environment_with_a_wide_integer_is_refused(
    server: LiveServer, engine: Engine
) -> None:
    token = make_runner(engine, "h100-a")
    with server.client(token) as client:
        refused = client.post("/api/v1/runners/register", json={"environment": {"x": WIDE}})
        assert refused.status_code == 422, refused.text
        assert "$.environment.x: an integer beyond 64 bits" in refused.text
        fine = client.post("/api/v1/runners/register",
                           json={"environment": {"x": LARGEST_INTEGER}})  # fmt: skip
        assert fine.status_code == 200, fine.text
    with engine.connect() as conn:
        stored = conn.execute(select(Runner.environment)).scalar_one()
    assert stored == {"x": LARGEST_INTEGER}


def test_a_document_with_a_wide_integer_is_refused(server: LiveServer, engine: Engine) -> None:
    doc = document(commit="wide")
    doc["environment"]["gpu"]["sm_count"] = 10**4000
    with server.client(ADMIN_TOKEN) as admin:
        refused = admin.post("/api/v1/runs", content=json.dumps(doc),
                             headers={"Content-Type": "application/json"})  # fmt: skip
        assert refused.status_code == 422, refused.text
        assert (
            "$.environment.gpu.sm_count: an integer beyond 64 bits (4001 digits)"
            in (refused.json()["detail"])
        )
        assert admin.get("/healthz").status_code == 200  # the connection and server carry on
        # A free-form fact of 78 bits too: read as JSON's double (as orjson reads it), it would
        # be stored as another number (issue 49). Refused, named; nothing stored.
        doc["environment"]["gpu"]["sm_count"] = 132
        doc["environment"]["extra_fact"] = {"n": WIDE}
        refused = admin.post("/api/v1/runs", content=json.dumps(doc),
                             headers={"Content-Type": "application/json"})  # fmt: skip
        assert refused.status_code == 422, refused.text
        assert "$.environment.extra_fact.n: an integer beyond 64 bits" in refused.text
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 0


def test_a_signed_webhook_payload_with_a_wide_integer_is_refused(
    settings: object, engine: Engine
) -> None:
    with _server(settings) as live, live.client() as client:  # type: ignore[arg-type]
        hook = Hook(client)
        event = pr_event("opened", number=WIDE)  # a pull request's number is an integer column
        answer = hook.send(event, event="pull_request")
        assert answer.status_code == 422, answer.text
        assert "$.number: an integer beyond 64 bits" in answer.json()["detail"]
    assert count(engine, WebhookDelivery) == 0
