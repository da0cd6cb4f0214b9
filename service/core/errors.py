"""Errors with a message a person can act on: the API's own (ApiError, with its HTTP status) and
the domain's (raised by the store, the evaluation and the runs, which know nothing of HTTP;
service/api/errors.py answers each kind with its status)."""

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


class DomainError(Exception):
    """Something a request asked for cannot be done, in words a person can act on; `extra`
    goes into the answer beside them (e.g. the candidates of an ambiguous sha)."""

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


class NotFound(DomainError):
    """What the request names does not exist, or has no results yet."""


class Conflict(DomainError):
    """The request contradicts the state it would change: a lease gone, a job already done."""


class InvalidReference(DomainError):
    """What the request names cannot be told apart or is no name at all (a short sha that
    matches several commits, a query that matches many series, a malformed sha)."""
