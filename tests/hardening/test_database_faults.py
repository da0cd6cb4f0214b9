"""A database that is down or frozen answers 503 with Retry-After within its timeout, never a
hang or a 500; /healthz says which of the database and the disk is wrong."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from sqlalchemy import Engine, text

from service.api.app import create_app
from service.core.settings import Settings
from tests.conftest import ADMIN_TOKEN
from tests.live_server import LiveServer


def test_healthz_names_a_full_disk(settings: Settings) -> None:
    settings.healthz_min_free_bytes = 1 << 62  # more than any disk has
    with LiveServer(create_app(settings, migrate=False)) as live:
        answer = httpx.get(f"{live.url}/healthz")
    assert answer.status_code == 503 and answer.headers["Retry-After"]
    body = answer.json()
    assert body["status"] == "unhealthy" and body["detail"].startswith("disk: ")
    assert "GiB needed" in body["disk"] and body["database"] in ("sqlite", "postgresql")


def test_a_database_that_is_down_answers_503_in_time(tmp_path: object) -> None:
    # Nothing listens on port 9: a PostgreSQL server that is down.
    settings = Settings(
        database_url="postgresql://kernelwatch@127.0.0.1:9/kernelwatch",
        data_dir=tmp_path,
        admin_token=ADMIN_TOKEN,
        database_connect_timeout_seconds=1,
        reaper_interval_seconds=0,
        analysis_poll_seconds=0,
    )
    with LiveServer(create_app(settings, migrate=False)) as live:
        started = time.monotonic()
        health = httpx.get(f"{live.url}/healthz", timeout=30)
        runners = httpx.get(f"{live.url}/api/v1/runners", timeout=30,
                            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})  # fmt: skip
        page = httpx.get(f"{live.url}/alerts", timeout=30)
        took = time.monotonic() - started
    # A page says it on a page (its JSON twin in JSON), with when to come back.
    assert page.status_code == 503 and page.headers["content-type"].startswith("text/html")
    assert "the database is unavailable" in page.text and page.headers["Retry-After"] == "5"
    assert health.status_code == 503 and health.headers["Retry-After"]
    assert health.json()["detail"].startswith("database unreachable: OperationalError: ")
    assert "127.0.0.1" in health.json()["detail"]  # the driver's cause, not the class alone
    assert runners.status_code == 503 and runners.headers["Retry-After"] == "5"
    assert "the database is unavailable" in runners.json()["detail"]
    assert took < 10


@pytest.mark.postgres
def test_a_frozen_database_answers_503_within_the_statement_timeout(
    settings: Settings, engine: Engine
) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("a statement timeout is PostgreSQL's")
    settings.database_statement_timeout_seconds = 1
    locked, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:  # another client holds every row of runners
        with engine.begin() as conn:
            conn.execute(text("LOCK TABLE runners IN ACCESS EXCLUSIVE MODE"))
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    try:
        assert locked.wait(10)
        with LiveServer(create_app(settings, migrate=False)) as live:
            started = time.monotonic()
            answer = httpx.get(f"{live.url}/api/v1/runners", timeout=30,
                               headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})  # fmt: skip
            took = time.monotonic() - started
            release.set()
            assert answer.status_code == 503, answer.text
            assert answer.headers["Retry-After"] == "5" and took < 5
            again = httpx.get(f"{live.url}/api/v1/runners", timeout=30,
                              headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})  # fmt: skip
            assert again.status_code == 200  # the lock gone, it answers again
    finally:
        release.set()
        holder.join(30)


def test_healthz_answers_within_a_second_while_every_connection_and_thread_waits(
    settings: Settings,
) -> None:
    """Every pooled connection held, and 60 requests (more than the thread pool's 40) waiting
    for one: /healthz still answers at once, on its own connection and threads, and says how
    many connections are in use."""
    settings.database_pool_timeout_seconds = 6
    app = create_app(settings, migrate=False)
    pool = app.state.engine.pool
    held = [app.state.engine.connect() for _ in range(pool.size() + pool._max_overflow)]
    waiting: list[threading.Thread] = []
    try:
        with LiveServer(app) as live:
            for _ in range(60):
                waiting.append(threading.Thread(target=httpx.get, daemon=True, kwargs={
                    "url": f"{live.url}/api/v1/runners", "timeout": 30,
                    "headers": {"Authorization": f"Bearer {ADMIN_TOKEN}"}}))  # fmt: skip
                waiting[-1].start()
            time.sleep(1)  # they hold every thread now, waiting for a connection
            for _ in range(3):
                started = time.monotonic()
                answer = httpx.get(f"{live.url}/healthz", timeout=30)
                assert time.monotonic() - started < 1.0
                assert answer.status_code == 200, answer.text
                assert answer.json()["connections"] == f"{len(held)} of {len(held)} in use"
            for conn in held:
                conn.close()
            for thread in waiting:
                thread.join(30)
    finally:
        for conn in held:
            conn.close()
