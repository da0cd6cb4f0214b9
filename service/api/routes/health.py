"""Liveness: the database answers and the data directory has room, said within a second."""

from __future__ import annotations

import shutil
from typing import Any

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from service.api.deps import SettingsDep
from service.api.errors import RETRY_AFTER_SECONDS
from service.core.db import HEALTH_SECONDS, db_cause
from service.core.migrate import schema_problem
from service.store.reads import queries

router = APIRouter(tags=["health"])
UNUSABLE = "schema unusable"
HEALTH_THREADS = 4


def _threads(request: Request) -> anyio.CapacityLimiter:
    """The app's own threads for /healthz: requests that hold every thread of the default pool
    (each waiting for a database connection) must not keep the health check waiting for one.
    Made on first use, inside the event loop the limiter belongs to."""
    state = request.app.state
    if getattr(state, "health_threads", None) is None:
        state.health_threads = anyio.CapacityLimiter(HEALTH_THREADS)
    return state.health_threads


async def _ping(request: Request) -> str:
    """The database's dialect, or why it did not answer in time (the health engine's own
    connection and thread: service.core.db.health_engine), or why its schema will not do."""
    engine = request.app.state.health_engine
    with anyio.move_on_after(HEALTH_SECONDS * 0.8):
        try:
            dialect, revision = await anyio.to_thread.run_sync(
                queries.ping_engine, engine, limiter=_threads(request), abandon_on_cancel=True
            )
            problem = schema_problem(revision, request.app.state.schema_head)
            return f"{UNUSABLE}: {problem}" if problem else dialect
        except Exception as exc:  # down, frozen (statement timeout), out of connections
            return f"unreachable: {type(exc).__name__}: {db_cause(exc)}"
    return f"unreachable: no answer within {HEALTH_SECONDS * 0.8:.1f} s"


def _pool(request: Request) -> str:
    """How many of the request pool's connections are in use: all of them, and requests wait
    for one (up to KERNELWATCH_DATABASE_POOL_TIMEOUT_SECONDS, then 503)."""
    pool = request.app.state.engine.pool
    size, overflow = getattr(pool, "size", None), getattr(pool, "_max_overflow", None)
    if not callable(size) or overflow is None:
        return "not pooled"
    return f"{pool.checkedout()} of {size() + max(overflow, 0)} in use"


@router.get("/healthz", response_model=None)
async def healthz(request: Request, settings: SettingsDep) -> dict[str, Any] | JSONResponse:
    """200 when the database answers and the data directory has free disk; else 503 naming which."""
    problems: list[str] = []
    database = await _ping(request)
    if database.startswith(("unreachable", UNUSABLE)):
        problems.append(f"database {database}")
    folder = settings.data_dir
    existing = next((p for p in (folder, *folder.parents) if p.exists()), folder.anchor or "/")
    free = shutil.disk_usage(existing).free
    disk = f"{free / 2**30:.1f} GiB free in {existing}"
    if free < settings.healthz_min_free_bytes:
        disk += f", under the {settings.healthz_min_free_bytes / 2**30:.1f} GiB needed"
        problems.append(f"disk: {disk}")
    body = {"status": "ok" if not problems else "unhealthy", "database": database, "disk": disk,
            "connections": _pool(request)}  # fmt: skip
    if problems:
        body["detail"] = "; ".join(problems)
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return JSONResponse(status_code=503, content=body, headers=headers)
    return body
