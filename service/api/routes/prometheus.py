"""Prometheus metrics of this server: its counters and the database's gauges."""

from __future__ import annotations

from fastapi import APIRouter, Response

from service.api.deps import SessionDep
from service.core.telemetry import CONTENT_TYPE, exposition
from service.store.reads.telemetry import gauges

router = APIRouter(tags=["health"])


@router.get("/metrics", response_class=Response)
def metrics(session: SessionDep) -> Response:
    """Prometheus text format: ingest, queue, jobs, analysis backlog, alerts, runners, HTTP."""
    return Response(exposition(gauges(session)), media_type=CONTENT_TYPE)
