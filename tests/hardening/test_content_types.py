"""What POST /api/v1/runs reads (issue 35, item 7): JSON only, said so (415 otherwise), and a
body gzipped by a runner on a slow link (Content-Encoding: gzip) within the same size limits
after decompression, a decompression bomb cut off at the limit."""

from __future__ import annotations

import gzip
import json

import pytest
from sqlalchemy import Engine, func, select

from service.api.app import create_app
from service.core.settings import Settings
from service.models import Run
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer


def _runs(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(Run)).scalar_one()


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "application/xml",
     "multipart/form-data; boundary=x"],
)  # fmt: skip
def test_a_body_not_said_to_be_json_is_415(
    server: LiveServer, engine: Engine, content_type: str | None
) -> None:
    body = json.dumps(document(commit="a")).encode()
    headers = {"Content-Type": content_type} if content_type else {}
    with server.client(ADMIN_TOKEN) as admin:
        answer = admin.post("/api/v1/runs", content=body, headers=headers)
        assert answer.status_code == 415, answer.text
        assert "send the result document as application/json" in answer.json()["detail"]
        assert _runs(engine) == 0
        json_ok = {"Content-Type": "application/json; charset=utf-8"}
        assert admin.post("/api/v1/runs", content=body, headers=json_ok).status_code == 201


def test_a_gzipped_document_is_read_within_the_limits(settings: Settings, engine: Engine) -> None:
    doc = document(commit="a")
    body = json.dumps(doc).encode()
    settings.max_body_bytes = len(body) + 100
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    with (
        LiveServer(create_app(settings, migrate=False)) as live,
        live.client(ADMIN_TOKEN) as admin,
    ):
        stored = admin.post("/api/v1/runs", content=gzip.compress(body), headers=headers)
        assert stored.status_code == 201, stored.text
        assert stored.json()["run_id"] == doc["run_id"]
        # 8 MiB of blanks gzip to ~8 KiB: cut off once past the limit, never inflated whole.
        bomb = gzip.compress(b"{" + b" " * (8 << 20) + b"}")
        assert len(bomb) < settings.max_body_bytes
        answer = admin.post("/api/v1/runs", content=bomb, headers=headers)
        assert answer.status_code == 413 and "once decompressed" in answer.json()["detail"]
        for content, encoding, status, why in [
            (gzip.compress(body)[:-20], "gzip", 422, "ends before its stream does"),
            (b"not gzip at all", "gzip", 422, "not valid gzip"),
            (body, "br", 415, "Content-Encoding 'br' is not supported"),
        ]:
            answer = admin.post("/api/v1/runs", content=content,
                                headers={**headers, "Content-Encoding": encoding})  # fmt: skip
            assert answer.status_code == status and why in answer.json()["detail"], answer.text
    assert _runs(engine) == 1
