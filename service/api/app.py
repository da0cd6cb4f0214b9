"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from service.api import openapi
from service.api.access import ReadAccess
from service.api.errors import RefuseNulInUrl, install_error_handlers
from service.api.http_metrics import HttpMetrics
from service.api.routes import (
    alerts,
    commits,
    compare,
    health,
    imports,
    jobs,
    prometheus,
    runners,
    runs,
    series,
    webhooks,
)
from service.api.small_bodies import SmallBodies
from service.api.strict_query import refuse_unknown_query
from service.core.db import engine_for, health_engine, session_factory
from service.core.migrate import head_revision, upgrade
from service.core.runtime import tune_garbage_collector
from service.core.settings import Settings
from service.integrations import notify
from service.pages import alerts as alerts_page
from service.pages import commit as commit_page
from service.pages import compare as compare_page
from service.pages import overview, pulls, trends, vendor
from service.pages.render import STATIC_DIR
from service.runs.worker import AnalysisWorker, reap_forever

log = logging.getLogger(__name__)
DOCS_ASSETS = "/static/docs"
# Each page module routes its page and the page's JSON twin (vendor: plotly.js for them).
PAGES = (vendor, overview, trends, commit_page, compare_page, alerts_page, pulls)


def create_app(settings: Settings | None = None, *, migrate: bool | None = None) -> FastAPI:
    """Build the app; the embedded SQLite database migrates itself unless told otherwise."""
    settings = settings or Settings()
    engine = engine_for(settings)
    if migrate if migrate is not None else settings.is_sqlite:
        upgrade(engine)

    factory = session_factory(engine)
    health_db = health_engine(settings)

    analysis = AnalysisWorker(factory, settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        tasks = []
        if settings.reaper_interval_seconds > 0:
            tasks.append(reap_forever(factory, settings.reaper_interval_seconds))
        if settings.analysis_poll_seconds > 0:
            tasks.append(analysis.forever())
        if settings.notify_webhooks:
            tasks.append(notify.deliver_forever(factory, settings))
        running = [asyncio.create_task(t) for t in tasks]
        tune_garbage_collector()
        yield
        for task in running:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        engine.dispose()
        health_db.dispose()

    # /docs and /redoc with Swagger UI and ReDoc served from here (fastapi-offline bundles
    # them), not from a CDN: they work on a network without internet. Under /static/, which is
    # open like the pages' own CSS and JavaScript; the OpenAPI they read keeps the read token.
    app = FastAPIOffline(
        title="kernelwatch",
        version="1",
        summary="Continuous performance-regression tracking for GPU kernels",
        lifespan=lifespan,
        static_url=DOCS_ASSETS,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.health_engine = health_db
    app.state.schema_head = head_revision()
    app.state.session_factory = factory
    app.state.analysis = analysis
    install_error_handlers(app)
    app.add_middleware(RefuseNulInUrl)
    app.add_middleware(SmallBodies)
    app.add_middleware(ReadAccess, settings=settings)
    # A 2,000-point series is 845 kB of JSON and a fifth of it gzipped: sent so to who asks.
    app.add_middleware(GZipMiddleware, minimum_size=1024)
    app.add_middleware(HttpMetrics)  # outermost: it counts the 401s and 400s of the others too
    routers = (
        health,
        prometheus,
        webhooks,
        runs,
        imports,
        jobs,
        runners,
        commits,
        series,
        compare,
        alerts,
    )
    # The API's routes refuse a query parameter they do not take; not the pages (a link may
    # carry any), nor what a scraper or GitHub calls (their query is theirs to extend).
    strict = [Depends(refuse_unknown_query)]
    for module in routers:
        loose = module in (prometheus, webhooks)
        app.include_router(module.router, dependencies=None if loose else strict)
    for module in PAGES:
        app.include_router(module.router)
    # After the pages' routes, which serve plotly.js under /static/vendor/ themselves.
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.openapi = lambda: openapi.describe(app)  # type: ignore[method-assign]
    return app
