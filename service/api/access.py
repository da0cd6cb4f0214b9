"""Private reads: with KERNELWATCH_READ_TOKEN set, every GET needs the read or the admin token.

Applies to the API, the pages and their JSON twins, and /docs; /healthz stays open for load
balancers, and /static/ serves only the pages' own CSS and JavaScript, never data. Writes keep
their own tokens (admin, runner, the webhook's signature).
"""

from __future__ import annotations

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from service.core.settings import Settings
from service.core.tokens import same_secret

PUBLIC_PATHS = frozenset({"/healthz"})
PUBLIC_PREFIXES = ("/static/",)
READS = frozenset({"GET", "HEAD"})


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


def may_read(settings: Settings, token: str | None) -> bool:
    """Whether `token` opens the reads: the read token or the admin token, compared in
    constant time (both are compared, so the answer time does not tell which one matched)."""
    if not settings.read_token:
        return True
    if not token:
        return False
    read = same_secret(token, settings.read_token)
    admin = bool(settings.admin_token) and same_secret(token, settings.admin_token or "")
    return read or admin


class ReadAccess:
    """ASGI middleware: 401 for a GET without the read (or admin) token, when one is set."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app, self.settings = app, settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and self.settings.read_token
            and scope["method"] in READS
            and scope["path"] not in PUBLIC_PATHS
            and not scope["path"].startswith(PUBLIC_PREFIXES)
            and not may_read(self.settings, _bearer(scope))
        ):
            answer = JSONResponse(
                status_code=401,
                content={
                    "detail": "reads are private on this server: send "
                    "'Authorization: Bearer <token>' with the read token (KERNELWATCH_READ_TOKEN) "
                    "or the admin token"
                },
                headers={"WWW-Authenticate": 'Bearer realm="kernelwatch"'},
            )
            await answer(scope, receive, send)
            return
        await self.app(scope, receive, send)
