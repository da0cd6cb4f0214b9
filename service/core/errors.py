"""The one exception type that carries an HTTP status and a message a person can act on."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(
        self, status: int, detail: str, headers: dict[str, str] | None = None, **extra: Any
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers
        self.extra = extra
