"""How the API reads a request body (service.api.body), over real HTTP, on SQLite and
PostgreSQL."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine, func, select

from service.models import Run
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer


def _runs(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(Run)).scalar_one()


@pytest.mark.parametrize("content_type", ["text/json", "application/x-ndjson"])
def test_a_media_type_that_merely_mentions_json_is_415(
    server: LiveServer, engine: Engine, content_type: str
) -> None:
    """Only application/json and application/*+json say the body is one JSON document."""
    body = json.dumps(document(commit="a")).encode()
    with server.client(ADMIN_TOKEN) as admin:
        answer = admin.post("/api/v1/runs", content=body, headers={"Content-Type": content_type})
        assert answer.status_code == 415, answer.text
        assert f"Content-Type {content_type!r}" in answer.json()["detail"]
        assert _runs(engine) == 0
        # A +json type is JSON by its suffix, so the line is drawn at the media type, not "json".
        suffixed = {"Content-Type": "application/vnd.kernelwatch.run+json"}
        assert admin.post("/api/v1/runs", content=body, headers=suffixed).status_code == 201
