"""Per-route limits on a request's body: a route whose body is a few fields (a runner's
registration, a triage, a job's lease) takes kilobytes, not the 32 MiB of a result document.

Parsed on the event loop, a 20 MB registration once held every other request for 5 s (/healthz
answered 503 past its deadline) and was stored whole. A body declared larger than its route
takes is answered 413 before a byte of it is read, and the connection closed; one that arrives
without a length is counted as it comes and refused the same way once past the limit. The
routes that take large bodies read them themselves, bounded (service.api.body: the result
document, an import's file, a webhook's payload).
"""

from __future__ import annotations

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SMALL_BODY_BYTES = 64 * 1024
# The routes that read their own large bodies, under KERNELWATCH_MAX_BODY_BYTES (an import's
# format follows its prefix).
LARGE_BODY_PATHS = ("/api/v1/runs", "/api/v1/imports/", "/webhooks/github")
WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


class SmallBodies:
    def __init__(self, app: ASGIApp, limit: int = SMALL_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in WITH_BODY
            or scope["path"] == "/api/v1/runs"
            or scope["path"].startswith(LARGE_BODY_PATHS[1:])
        ):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"").strip()
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send, f"body of {int(declared)} bytes")
            return
        seen = 0
        started = refused = False

        async def counted() -> Message:
            # Past the limit: answered here, and the app told the client went away (whatever it
            # sends after is dropped).
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit and not started:
                refused = True
                await self._refuse(send, "body")
                return {"type": "http.disconnect"}
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if refused:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, counted, watched)

    async def _refuse(self, send: Send, what: str) -> None:
        detail = f"{what} is over this route's {self.limit}-byte limit"
        body = orjson.dumps({"detail": detail})
        await send({"type": "http.response.start", "status": 413, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"connection", b"close")]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})
