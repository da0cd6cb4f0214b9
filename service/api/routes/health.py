"""Liveness: the database answers and the data directory has room."""

from __future__ import annotations

import shutil
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from service.api.deps import SessionDep, SettingsDep
from service.api.errors import RETRY_AFTER_SECONDS
from service.store import queries

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=None)
def healthz(session: SessionDep, settings: SettingsDep) -> dict[str, Any] | JSONResponse:
    """200 when the database answers and the data directory has free disk; else 503 naming which."""
    problems: list[str] = []
    try:
        database = queries.ping(session)
    except Exception as exc:  # down, frozen (statement timeout), out of connections
        database = f"unreachable: {type(exc).__name__}"
        problems.append(f"database {database}")
    folder = settings.data_dir
    existing = next((p for p in (folder, *folder.parents) if p.exists()), folder.anchor or "/")
    free = shutil.disk_usage(existing).free
    disk = f"{free / 2**30:.1f} GiB free in {existing}"
    if free < settings.healthz_min_free_bytes:
        disk += f", under the {settings.healthz_min_free_bytes / 2**30:.1f} GiB needed"
        problems.append(f"disk: {disk}")
    body = {"status": "ok" if not problems else "unhealthy", "database": database, "disk": disk}
    if problems:
        body["detail"] = "; ".join(problems)
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return JSONResponse(status_code=503, content=body, headers=headers)
    return body
