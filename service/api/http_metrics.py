"""Each answered request counted by its route's template, method and status, with its seconds
(the counters are service.core.telemetry's)."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.core.telemetry import HTTP_REQUESTS, HTTP_SECONDS


class HttpMetrics:
    """ASGI middleware: counts each answered request under its route's template (e.g.
    /api/v1/jobs/{job_id}/fail), never the raw path, so the series stay few."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers when the app raises before any response
        counted = False

        def count() -> None:
            nonlocal counted
            counted = True
            route = getattr(scope.get("route"), "path", None)
            if route is None:
                route = "/static" if scope["path"].startswith("/static/") else "unmatched"
            HTTP_REQUESTS.labels(route, scope["method"], str(status)).inc()
            HTTP_SECONDS.labels(route).observe(time.perf_counter() - started)

        async def remember(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                # Counted before the last byte leaves: a client that has its answer and then
                # reads /metrics finds it counted.
                count()
            await send(message)

        try:
            await self.app(scope, receive, remember)
        finally:
            if not counted:
                count()
