"""A database whose schema this kernelwatch cannot use (issue 36, item 1): `kernelwatch serve`
refuses it with one line saying what to run, and /healthz answers 503 with the reason."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, text

from service.api.app import create_app
from service.core.migrate import head_revision, schema_problem
from service.core.settings import Settings
from tests.e2e import free_port
from tests.live_server import LiveServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def at_revision(engine: Engine) -> Iterator[callable]:
    def move(revision: str) -> None:
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})

    yield move
    move(head_revision())


def test_what_is_wrong_and_what_to_run() -> None:
    head = head_revision()
    assert schema_problem(head, head) is None
    assert "no kernelwatch schema" in (schema_problem(None, head) or "")
    assert "run `kernelwatch db upgrade`" in (schema_problem("0001", head) or "")
    assert "does not know" in (schema_problem("9999_newer", head) or "")


def test_healthz_says_the_schema_is_behind(settings: Settings, at_revision: callable) -> None:
    with LiveServer(create_app(settings, migrate=False)) as live:
        assert httpx.get(f"{live.url}/healthz").status_code == 200
        at_revision("0015")
        answer = httpx.get(f"{live.url}/healthz")
        assert answer.status_code == 503
        assert "behind this kernelwatch's" in answer.json()["detail"]
        assert "run `kernelwatch db upgrade`" in answer.json()["detail"]


def test_serve_refuses_a_schema_it_cannot_use(
    settings: Settings, engine: Engine, at_revision: callable
) -> None:
    # SQLite migrates itself when behind: a revision from a newer kernelwatch it cannot.
    sqlite = engine.dialect.name == "sqlite"
    at_revision("9999_newer" if sqlite else "0015")
    env = {**os.environ, "KERNELWATCH_DATABASE_URL": settings.effective_database_url,
           "KERNELWATCH_DATA_DIR": str(settings.data_dir)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(free_port())],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert ("does not know" if sqlite else "run `kernelwatch db upgrade`") in lines[0]
