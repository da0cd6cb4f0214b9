"""Every error leaves the API as JSON with a `detail` a person can act on."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import ValidationError
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as SqlTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from service.core.errors import (
    Conflict,
    DomainError,
    InvalidReference,
    NotFound,
    Unprocessable,
)
from service.web.allowed import allowed_methods
from service.web.errors import HttpError

log = logging.getLogger(__name__)
RETRY_AFTER_SECONDS = 5


def _location(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "$"


def describe_validation_errors(errors: list[Any]) -> list[dict[str, str]]:
    return [{"loc": _location(tuple(e["loc"])), "msg": e["msg"]} for e in errors]


def validation_response(errors: list[Any], what: str) -> JSONResponse:
    described = describe_validation_errors(errors)
    head = "; ".join(f"{e['loc']}: {e['msg']}" for e in described[:5])
    more = f" (and {len(described) - 5} more)" if len(described) > 5 else ""
    return JSONResponse(
        status_code=422,
        content={"detail": f"invalid {what}: {head}{more}", "errors": described},
    )


def _detail(answer: JSONResponse) -> str:
    return str(orjson.loads(answer.body)["detail"])


class RefuseNulInUrl:
    """400 for a NUL character in the path or query: no database can store or compare it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            b"%00" in scope.get("query_string", b"") or "\x00" in scope.get("path", "")
        ):
            detail = "the URL holds a NUL character (%00), which no value can contain"
            await JSONResponse(status_code=400, content={"detail": detail})(scope, receive, send)
            return
        await self.app(scope, receive, send)


# The HTTP answer to each kind of the domain's errors (service/core/errors.py).
DOMAIN_STATUS: dict[type[DomainError], int] = {
    NotFound: 404, Conflict: 409, InvalidReference: 400, Unprocessable: 422,
}  # fmt: skip


def status_of(exc: DomainError) -> int:
    return next(s for kind, s in DOMAIN_STATUS.items() if isinstance(exc, kind))


def _answer(exc: HttpError | DomainError) -> JSONResponse:
    if isinstance(exc, DomainError):
        return JSONResponse(status_code=status_of(exc), content={"detail": exc.detail, **exc.extra})
    return JSONResponse(
        status_code=exc.status, content={"detail": exc.detail, **exc.extra}, headers=exc.headers
    )


def _is_page(request: Request) -> bool:
    return getattr(request.scope.get("route"), "response_class", None) is HTMLResponse


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain_error(request: Request, exc: DomainError) -> Response:
        if _is_page(request):
            from service.pages.render import error_page  # a page: the words on a page

            return error_page(request, status_of(exc), exc.detail)
        return _answer(exc)

    @app.exception_handler(HttpError)
    async def _http_error_of_ours(_request: Request, exc: HttpError) -> JSONResponse:
        return _answer(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        headers = getattr(exc, "headers", None)
        if exc.status_code == 404 and detail == "Not Found":
            detail = "no such endpoint; the API is described at /docs"
        if exc.status_code == 405:
            allow = ", ".join(allowed_methods(app.router.routes, request.url.path))
            if request.method == "OPTIONS":  # what the path takes, not a refusal
                return Response(status_code=204, headers={"Allow": allow})
            headers = {**(headers or {}), "Allow": allow}
            if detail == "Method Not Allowed":
                detail = f"{request.method} is not taken here; it takes {allow}"
        return JSONResponse(
            status_code=exc.status_code, content={"detail": detail}, headers=headers
        )

    @app.exception_handler(RequestValidationError)
    async def _request_invalid(request: Request, exc: RequestValidationError) -> Response:
        answer = validation_response(list(exc.errors()), "request")
        if _is_page(request):
            # A page: the same status and words as its JSON twin, on a page a person can read.
            from service.pages.render import error_page

            return error_page(request, answer.status_code, _detail(answer))
        return answer

    @app.exception_handler(ValidationError)
    async def _model_invalid(_request: Request, exc: ValidationError) -> JSONResponse:
        return validation_response(list(exc.errors()), "document")

    @app.exception_handler(OperationalError)
    @app.exception_handler(SqlTimeoutError)
    async def _database_unavailable(request: Request, exc: Exception) -> Response:
        # Down, frozen, out of connections or a statement cancelled by its timeout: the
        # request may well work again shortly, so 503 and when to try, never 500.
        log.warning("database unavailable on %s %s: %s", request.method, request.url.path,
                    str(exc).splitlines()[0][:300])  # fmt: skip
        detail = f"the database is unavailable ({type(exc).__name__}); try again shortly"
        retry = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        if _is_page(request):  # a page: words on a page, as the README promises
            from service.pages.render import error_page

            page = error_page(request, 503, detail)
            page.headers.update(retry)
            return page
        return JSONResponse(status_code=503, content={"detail": detail}, headers=retry)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(
            status_code=500,
            content={"detail": f"internal error ({type(exc).__name__}); see the service log"},
        )
