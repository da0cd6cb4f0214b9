"""Liveness with a database round trip."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import text

from service.api.deps import SessionDep
from service.core.errors import ApiError

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(session: SessionDep) -> dict[str, str]:
    """200 when the database answers."""
    try:
        session.execute(text("SELECT 1"))
    except Exception as exc:
        raise ApiError(503, f"database unreachable: {type(exc).__name__}") from exc
    return {"status": "ok", "database": session.get_bind().dialect.name}
