"""JSON nested deeper than the service reads (service.api.body.MAX_DEPTH) gets a 422 that says
so, on every route that parses JSON itself, and nothing is stored (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, func, select

from service.api.body import MAX_DEPTH, check_depth
from service.core.errors import Unprocessable
from service.models import Run, WebhookDelivery
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import Hook, _server
from tests.service.store.jobs.test_queue import make_runner


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def count(engine: Engine, model: type) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(model)).scalar_one()


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_000, 1_100, 100_000])
def test_a_deep_result_document_is_refused_not_a_500(
    server: LiveServer, engine: Engine, depth: int
) -> None:
    token = make_runner(engine, "h100-a")
    with server.client(token) as client:
        for body in (nested(depth), b'{"suite": ' + nested(depth) + b"}"):
            answer = client.post("/api/v1/runs", content=body,
                                 headers={"Content-Type": "application/json"})  # fmt: skip
            assert answer.status_code == 422, answer.text
            assert f"nests deeper than {MAX_DEPTH} levels" in answer.json()["detail"]
        # a document as deep as the limit allows is read, and judged on its fields
        fine = client.post("/api/v1/runs", content=nested(MAX_DEPTH),
                           headers={"Content-Type": "application/json"})  # fmt: skip
        assert fine.status_code == 422 and "nests deeper" not in fine.text
    with server.client(ADMIN_TOKEN) as admin:  # stores a document with no job of its own
        stored = admin.post("/api/v1/runs", json=document(commit="ok"))
        assert stored.status_code == 201, stored.text
    assert count(engine, Run) == 1


def test_a_deep_signed_webhook_payload_is_refused(settings: object, engine: Engine) -> None:
    with _server(settings) as live, live.client() as client:  # type: ignore[arg-type]
        hook = Hook(client)
        answer = hook.send(None, raw=b'{"ref": ' + nested(5_000) + b"}")
        assert answer.status_code == 422, answer.text
        assert "the push payload nests deeper" in answer.json()["detail"]
    assert count(engine, WebhookDelivery) == 0


def test_deep_series_params_are_refused(server: LiveServer) -> None:
    with server.client() as client:
        deep = "[" * 2_000 + "]" * 2_000
        answer = client.get("/api/v1/series", params={"suite": "s", "params": deep})
        assert answer.status_code == 422 and "params nests deeper" in answer.json()["detail"]


def test_the_depth_walk_names_the_path_and_takes_numbers_lists_in_one_step() -> None:
    value: object = {"workloads": [{"timing": {"samples": list(range(100_000))}}]}
    check_depth(value, "the body")  # 4 deep: fine
    for _ in range(MAX_DEPTH):
        value = {"a": value}
    with pytest.raises(Unprocessable) as refused:  # answered 422
        check_depth(value, "the body")
    assert "(at $.a.a.a" in refused.value.detail
