"""What only HTTP knows of an error: a request the protocol refuses before any domain sees it
(no valid token: 401, a method the route does not take: 405, a body too large: 413, of a media
type or encoding not taken: 415, a route this deployment is not set up to serve: 503), with its
status and headers. Everything a request asks that
cannot be done is a domain error (service/core/errors.py); service/api/errors.py answers both,
in one place."""

from __future__ import annotations

from typing import Any

PROTOCOL_STATUSES = frozenset({401, 405, 408, 413, 415, 503})


class HttpError(Exception):
    def __init__(
        self, status: int, detail: str, headers: dict[str, str] | None = None, **extra: Any
    ) -> None:
        if status not in PROTOCOL_STATUSES:
            raise ValueError(f"{status} is a domain error's status: raise service.core.errors'")
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers
        self.extra = extra
