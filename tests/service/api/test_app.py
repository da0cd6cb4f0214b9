"""create_app (service.api.app): what it migrates, what it wires, what its lifespan runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.exc import OperationalError

from service.api.app import create_app
from service.core.migrate import head_revision
from service.core.settings import Settings
from service.runs.worker import AnalysisWorker
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer
from tests.service.store.jobs.test_queue import make_runner

SQLITE_ONLY = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def served_once(settings: Settings, migrate: bool | None = None) -> None:
    """The app built, started and stopped (its lifespan disposes of its engines)."""
    with LiveServer(create_app(settings, migrate=migrate)) as live:
        assert httpx.get(f"{live.url}/openapi.json").status_code == 200


def within(seconds: float, done: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_an_empty_sqlite_database_is_migrated_unless_told_not_to(tmp_path: Path) -> None:
    fresh, left = tmp_path / "fresh.db", tmp_path / "left.db"
    served_once(Settings(database_url=f"sqlite:///{fresh}", data_dir=tmp_path))
    served_once(Settings(database_url=f"sqlite:///{left}", data_dir=tmp_path), migrate=False)
    assert {"runs", "jobs", "alerts", "alembic_version"} <= tables(f"sqlite:///{fresh}")
    engine = create_engine(f"sqlite:///{fresh}")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == (
            head_revision()
        )
    engine.dispose()
    assert tables(f"sqlite:///{left}") == set()


def test_a_postgresql_database_is_migrated_only_when_asked() -> None:
    """By default the app does not touch PostgreSQL while it is built (`kernelwatch migrate`
    does that, once, before the replicas start): a server that is down fails no build."""
    down = Settings(database_url="postgresql://kw@127.0.0.1:1/none")
    app = create_app(down)
    assert app.state.settings is down
    with pytest.raises(OperationalError):
        create_app(down, migrate=True)


def test_the_state_holds_what_the_routes_and_workers_read(settings: Settings) -> None:
    app = create_app(settings, migrate=False)
    try:
        state = app.state
        assert state.settings is settings
        assert state.engine.url.render_as_string(hide_password=False) == settings.database_url
        assert state.session_factory.kw["bind"] is state.engine
        # /healthz has an engine of its own, which no request's session can exhaust.
        assert state.health_engine is not state.engine
        assert state.health_engine.url == state.engine.url
        assert state.schema_head == head_revision()
        assert isinstance(state.analysis, AnalysisWorker) and state.analysis.settings is settings
    finally:
        app.state.engine.dispose()
        app.state.health_engine.dispose()


def test_each_router_the_pages_and_the_static_files_are_served(server: LiveServer) -> None:
    with server.client() as client:
        for method, path, status in [
            ("GET", "/healthz", 200),
            ("GET", "/metrics", 200),
            ("POST", "/webhooks/github", 503),  # no secret on this server
            ("GET", "/api/v1/runs", 200),
            ("POST", "/api/v1/imports/gbench", 401),
            ("GET", "/api/v1/jobs", 200),
            ("GET", "/api/v1/runners", 200),
            ("GET", "/api/v1/commits", 200),
            ("GET", "/api/v1/series", 400),  # no series named
            ("GET", "/api/v1/compare", 422),  # no commits given
            ("GET", "/api/v1/alerts", 200),
            ("GET", "/api/v1/alerts/groups", 200),
            ("GET", "/", 200),
            ("GET", "/alerts.json", 200),
            ("GET", "/static/style.css", 200),
            ("GET", "/static/vendor/plotly.min.js", 200),  # a page's route, not the mount
        ]:
            answer = client.request(method, path)
            assert answer.status_code == status, (path, answer.text[:200])
        missing = client.get("/api/v1/nothing")
    assert (missing.status_code, missing.json()["detail"]) == (
        404, "no such endpoint; the API is described at /docs"
    )  # fmt: skip


def test_the_api_docs_are_served_from_the_service_itself(server: LiveServer) -> None:
    with server.client() as client:
        docs = client.get("/docs")
        described = client.get("/openapi.json").json()
        assets = [a for a in docs.text.split('"') if a.startswith("/static/docs/")]
        fetched = {a: client.get(a).status_code for a in assets}
    assert docs.status_code == 200 and "https://" not in docs.text.split("<body>")[0]
    assert "/static/docs/swagger-ui-bundle.js" in fetched
    assert set(fetched.values()) == {200}
    assert (described["info"]["title"], described["info"]["version"]) == ("kernelwatch", "1")
    assert "ErrorBody" in described["components"]["schemas"]  # service.api.openapi's own


def test_the_api_refuses_unknown_query_parameters_but_not_metrics_github_or_pages(
    server: LiveServer,
) -> None:
    with server.client() as client:
        api = client.get("/api/v1/runners", params={"x": "1"})
        assert api.status_code == 400 and "unknown query parameter 'x'" in api.json()["detail"]
        assert client.get("/metrics", params={"x": "1"}).status_code == 200
        # The webhook's own answer: the query was let through.
        assert client.post("/webhooks/github", params={"x": "1"}).status_code == 503
        assert client.get("/alerts.json", params={"utm_source": "mail"}).status_code == 200


def test_the_middlewares_refuse_nul_and_large_bodies_and_gzip_large_answers(
    server: LiveServer,
) -> None:
    with server.client(ADMIN_TOKEN) as client:
        for answer in (client.get("/api/v1/runs%00"), client.get("/api/v1/runs?commit=ab%00")):
            assert answer.status_code == 400
            assert "NUL character" in answer.json()["detail"]
        big = client.post("/api/v1/alerts/groups/triage", content=b" " * 70_000,
                          headers={"Content-Type": "application/json"})  # fmt: skip
        assert big.status_code == 413
        assert big.json()["detail"] == "body of 70000 bytes is over this route's 65536-byte limit"
        zipped = client.get("/openapi.json", headers={"Accept-Encoding": "gzip"})
        small = client.get("/healthz", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in small.headers  # under 1 KiB: sent as it is


def requests_counted(client: httpx.Client, route: str, status: int) -> float:
    line = f'kernelwatch_http_requests_total{{method="GET",route="{route}",status="{status}"}} '
    found = [row for row in client.get("/metrics").text.splitlines() if row.startswith(line)]
    return float(found[0].removeprefix(line)) if found else 0.0


def test_private_reads_need_the_read_token_and_their_refusals_are_counted(
    settings: Settings,
) -> None:
    settings.read_token = "reader"
    live = LiveServer(create_app(settings, migrate=False))
    with live, live.client("reader") as reader, live.client() as anyone:
        before = requests_counted(reader, "unmatched", 401)
        refused = anyone.get("/api/v1/runs")
        assert refused.status_code == 401
        assert "reads are private on this server" in refused.json()["detail"]
        assert anyone.get("/docs").status_code == 401
        assert anyone.get("/healthz").status_code == 200  # a load balancer's
        assert anyone.get("/static/style.css").status_code == 200
        assert reader.get("/api/v1/runs").json() == []
        with live.client(ADMIN_TOKEN) as admin:
            assert admin.get("/api/v1/runs").status_code == 200
        # Counted by the outermost middleware, though refused before any route matched.
        assert requests_counted(reader, "unmatched", 401) == before + 2


def claim_one(live: LiveServer, engine: Engine) -> int:
    with live.client(ADMIN_TOKEN) as admin:
        admin.post("/api/v1/jobs", json={"repository": "acme/kernels", "sha": sha_for("j")})
    with live.client(make_runner(engine, "gpu-1")) as runner:
        return runner.post("/api/v1/jobs/claim").json()["job"]["id"]


@SQLITE_ONLY
def test_the_lifespan_runs_the_analysis_worker_and_the_reaper(
    settings: Settings, engine: Engine
) -> None:
    settings.analyse_in_request = False
    settings.analysis_poll_seconds, settings.reaper_interval_seconds = 0.2, 0.1
    settings.lease_seconds = 1
    app = create_app(settings, migrate=False)
    with LiveServer(app) as live, live.client(ADMIN_TOKEN) as admin:
        job_id = claim_one(live, engine)
        assert admin.post("/api/v1/runs", json=document(commit="a")).status_code == 201
        metrics = f"/api/v1/commits/{sha_for('a')}/metrics"
        assert within(10, lambda: not admin.get(metrics).json()["analysis_pending"])
        # The lease ends after a second: the reaper puts the job back without a claim.
        assert within(10, lambda: admin.get(f"/api/v1/jobs/{job_id}").json()["state"] == "queued")
        assert app.state.engine.pool.checkedin() >= 1
        assert app.state.health_engine.pool.checkedin() == 0
        assert admin.get("/healthz").status_code == 200
        assert app.state.health_engine.pool.checkedin() == 1
    # Stopped, the app has let go of every connection of both engines.
    assert app.state.engine.pool.checkedin() == app.state.health_engine.pool.checkedin() == 0


@SQLITE_ONLY
def test_workers_set_to_0_are_not_started(settings: Settings, engine: Engine) -> None:
    settings.analyse_in_request = False
    settings.analysis_poll_seconds = settings.reaper_interval_seconds = 0
    settings.lease_seconds = 1
    with LiveServer(create_app(settings, migrate=False)) as live, live.client(ADMIN_TOKEN) as admin:
        job_id = claim_one(live, engine)
        assert admin.post("/api/v1/runs", json=document(commit="a")).status_code == 201
        time.sleep(1.5)  # past the lease, and past the analysis a worker would have done
        metrics = admin.get(f"/api/v1/commits/{sha_for('a')}/metrics").json()
        assert metrics["analysis_pending"] is True
        assert admin.get(f"/api/v1/jobs/{job_id}").json()["state"] == "running"
