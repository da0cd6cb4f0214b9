"""The one family of errors a request can meet, each with a message a person can act on: raised
by the store, the evaluation, the runs and the routes and pages alike, none of which says an HTTP
status; service/api/errors.py answers each kind with its status, in one place. (What only HTTP
knows, a missing token or a body too large, is service.web.errors.HttpError.)"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """Something a request asked for cannot be done, in words a person can act on; `extra`
    goes into the answer beside them (e.g. the candidates of an ambiguous sha)."""

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    def within(self, context: str) -> DomainError:
        """The same error, its detail led by what was being done ("invalid document")."""
        again = type(self)(f"{context}: {self.detail}", **self.extra)
        again.__cause__ = self
        return again


class NotFound(DomainError):
    """What the request names does not exist, or has no results yet."""


class Conflict(DomainError):
    """The request contradicts the state it would change: a lease gone, a job already done."""


class Unprocessable(DomainError):
    """Well-formed input that still cannot be stored as it is: the detail names the field and
    what is wrong with it."""


class DocumentConflict(Conflict):
    """A result document's run id is stored already, with other contents."""


class InvalidDocument(Unprocessable):
    """A result document of the right shape that cannot be stored as it is (a line of commits
    that disagrees with the one stored, a timing that cannot be converted)."""


class InvalidReference(DomainError):
    """What the request names cannot be told apart or is no name at all (a short sha that
    matches several commits, a query that matches many series, a malformed sha)."""
