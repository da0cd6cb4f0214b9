"""The dependencies of routes and pages (service.web.deps), served on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from service.api.errors import install_error_handlers
from service.core.db import session_factory
from service.core.errors import NotFound
from service.core.settings import Settings
from service.models import Run
from service.web.deps import (
    MAX_ID,
    RowId,
    SessionDep,
    SessionFactoryDep,
    SettingsDep,
    ShaPath,
)
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer


class Served:
    """An app whose routes take each dependency and say what they got; the sessions they were
    given are kept, so that the test can see whether each was closed."""

    def __init__(self, settings: Settings, engine: Engine) -> None:
        self.sessions: list[Session] = []
        app = self.app = FastAPI()
        install_error_handlers(app)
        app.state.settings, app.state.session_factory = settings, session_factory(engine)

        @app.get("/settings")
        async def given_settings(settings: SettingsDep) -> dict[str, object]:
            return {"same": settings is app.state.settings, "limit": settings.max_body_bytes}

        @app.get("/factory")
        async def given_factory(factory: SessionFactoryDep) -> dict[str, object]:
            return {"same": factory is app.state.session_factory}

        @app.get("/runs")
        def count_runs(session: SessionDep) -> dict[str, object]:
            self.sessions.append(session)
            return {"runs": session.scalar(select(func.count()).select_from(Run))}

        @app.get("/runs/missing")
        def fail_after_reading(session: SessionDep) -> None:
            self.sessions.append(session)
            session.scalar(select(func.count()).select_from(Run))
            raise NotFound("no such run")

        @app.get("/rows/{row_id}")
        async def row(row_id: RowId) -> dict[str, object]:
            return {"id": row_id}

        @app.get("/commits/{sha}")
        async def commit(sha: ShaPath) -> dict[str, object]:
            return {"sha": sha}


@pytest.fixture
def served(settings: Settings, engine: Engine) -> Iterator[tuple[Served, httpx.Client]]:
    made = Served(settings, engine)
    with LiveServer(made.app) as live, live.client() as client:
        yield made, client


def all_checked_in(engine: Engine) -> bool:
    """Whether the pool has every connection back, within a second of the answer (a dependency's
    exit may run just after the answer is sent)."""
    deadline = time.monotonic() + 1
    while engine.pool.checkedout() and time.monotonic() < deadline:
        time.sleep(0.01)
    return engine.pool.checkedout() == 0


def test_the_settings_and_the_session_factory_are_the_apps_own(
    served: tuple[Served, httpx.Client], settings: Settings
) -> None:
    _, client = served
    settings.max_body_bytes = 12_345  # read per request, not copied when the app was built
    assert client.get("/settings").json() == {"same": True, "limit": 12_345}
    assert client.get("/factory").json() == {"same": True}


def test_each_request_gets_a_session_of_its_own_closed_after_it(
    served: tuple[Served, httpx.Client], server: LiveServer, engine: Engine
) -> None:
    made, client = served
    assert client.get("/runs").json() == {"runs": 0}
    with server.client(ADMIN_TOKEN) as admin:
        assert admin.post("/api/v1/runs", json=document(commit="a")).status_code == 201
    assert client.get("/runs").json() == {"runs": 1}  # the database the app's factory opens
    first, second = made.sessions
    assert first is not second
    assert first.get_bind() is engine
    assert all_checked_in(engine)
    assert not first.in_transaction() and not second.in_transaction()


def test_a_session_is_closed_when_its_route_fails(
    served: tuple[Served, httpx.Client], engine: Engine
) -> None:
    made, client = served
    answer = client.get("/runs/missing")
    assert (answer.status_code, answer.json()) == (404, {"detail": "no such run"})
    (session,) = made.sessions
    assert all_checked_in(engine)
    assert not session.in_transaction()


def test_a_row_id_is_a_positive_32_bit_integer(served: tuple[Served, httpx.Client]) -> None:
    _, client = served
    for given in ("1", str(MAX_ID)):
        assert client.get(f"/rows/{given}").json() == {"id": int(given)}
    for given in ("0", "-1", str(MAX_ID + 1), "one", "1.5"):
        answer = client.get(f"/rows/{given}")
        assert answer.status_code == 422, given
        assert answer.json()["errors"][0]["loc"] == "path.row_id", given


def test_the_largest_row_id_reaches_the_database_and_a_larger_does_not(
    server: LiveServer,
) -> None:
    """MAX_ID is what a PostgreSQL integer column holds: it is looked up, 404; one more would
    fail the query there, and is a 422 before it."""
    with server.client() as client:
        largest = client.get(f"/api/v1/jobs/{MAX_ID}")
        larger = client.get(f"/api/v1/jobs/{MAX_ID + 1}")
    assert (largest.status_code, largest.json()["detail"]) == (404, f"no job {MAX_ID}")
    assert larger.status_code == 422
    assert "less than or equal to 2147483647" in larger.json()["detail"]


def test_a_sha_in_a_path_is_4_to_40_hex_digits_of_either_case(
    served: tuple[Served, httpx.Client],
) -> None:
    made, client = served
    for given in ("abcd", "ABCDEF", "0123456789abcdef0123456789ABCDEF01234567"):
        assert client.get(f"/commits/{given}").json() == {"sha": given}
    for given in ("abc", "a" * 41, "abcg", "main"):
        answer = client.get(f"/commits/{given}")
        assert answer.status_code == 422, given
        assert answer.json()["errors"][0]["loc"] == "path.sha", given
    (parameter,) = made.app.openapi()["paths"]["/commits/{sha}"]["get"]["parameters"]
    assert parameter["description"] == "a commit's sha, or 4 or more of its first digits"
    assert parameter["schema"]["pattern"] == "^[0-9A-Fa-f]{4,40}$"
