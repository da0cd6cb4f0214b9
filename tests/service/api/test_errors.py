"""The domain's errors (service/core/errors.py) and the HTTP answers service/api/errors.py gives
them: every kind has its status, and the words and extras pass unchanged."""

from __future__ import annotations

from service.api.errors import DOMAIN_STATUS, status_of
from service.core import errors


def test_every_kind_of_domain_error_has_its_status() -> None:
    kinds = {
        k
        for k in vars(errors).values()
        if isinstance(k, type) and issubclass(k, errors.DomainError)
    } - {errors.DomainError}
    # Each kind the answer knows derives from DomainError directly; the rest from one of those.
    assert {k for k in kinds if k.__bases__ == (errors.DomainError,)} == set(DOMAIN_STATUS)
    assert all(status_of(k("x")) for k in kinds)
    assert status_of(errors.DocumentConflict("run r1 is stored")) == 409
    invalid = errors.InvalidDocument("commit.ancestors: disagrees").within("invalid document")
    assert isinstance(invalid, errors.InvalidDocument)
    assert (status_of(invalid), invalid.detail) == (
        422, "invalid document: commit.ancestors: disagrees")  # fmt: skip
    answer = errors.InvalidReference("abcd is ambiguous", candidates=["a", "b"])
    assert (status_of(answer), answer.detail, answer.extra) == (
        400, "abcd is ambiguous", {"candidates": ["a", "b"]})  # fmt: skip
    assert status_of(errors.NotFound("no job 7")) == 404
    assert status_of(errors.Conflict("job 7 is done")) == 409
