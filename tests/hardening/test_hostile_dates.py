"""Times valid in their own offset but outside the years 1-9999 once in UTC get a 422 naming the
field, not a 500 from the database layer; nothing is stored (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, func, select

from service.models import Commit, Run
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("commit.committed_at", "0001-01-01T00:00:00+05:00"),
        ("commit.committed_at", "9999-12-31T23:00:00-05:00"),
        ("started_at", "0001-01-01T03:00:00+04:00"),
        ("finished_at", "9999-12-31T22:00:00-02:30"),
    ],
)
def test_a_time_outside_utc_years_is_refused_by_field(
    server: LiveServer, engine: Engine, field: str, value: str
) -> None:
    doc = document(commit="c1")
    where = doc["commit"] if field.startswith("commit.") else doc
    where[field.split(".")[-1]] = value
    with server.client(ADMIN_TOKEN) as admin:
        answer = admin.post("/api/v1/runs", json=doc)
        assert answer.status_code == 422, answer.text
        assert answer.json()["errors"][0]["loc"] == field
        assert "outside the years 1-9999 once in UTC" in answer.json()["detail"]
        # the same instant said in UTC's own terms is stored, normalised
        where[field.split(".")[-1]] = "0001-01-01T00:00:00Z"
        doc["finished_at"] = doc["started_at"] = "2026-11-26T06:00:00+01:00"
        assert admin.post("/api/v1/runs", json=doc).status_code == 201
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 1
        assert conn.execute(select(func.count()).select_from(Commit)).scalar_one() == 1
