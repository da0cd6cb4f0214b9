"""The domain's errors (service/core/errors.py) and the HTTP answers service/api/errors.py gives
them: every kind has its status, and the words and extras pass unchanged."""

from __future__ import annotations

from service.api.errors import DOMAIN_STATUS, as_api_error
from service.core import errors


def test_every_kind_of_domain_error_has_its_status() -> None:
    kinds = {
        k
        for k in vars(errors).values()
        if isinstance(k, type) and issubclass(k, errors.DomainError)
    } - {errors.DomainError}
    # Each kind the answer knows derives from DomainError directly; the rest from one of those.
    assert {k for k in kinds if k.__bases__ == (errors.DomainError,)} == set(DOMAIN_STATUS)
    assert all(as_api_error(k("x")).status for k in kinds)
    assert as_api_error(errors.DocumentConflict("run r1 is stored")).status == 409
    invalid = errors.InvalidDocument("commit.ancestors: disagrees").within("invalid document")
    assert isinstance(invalid, errors.InvalidDocument)
    assert (as_api_error(invalid).status, invalid.detail) == (
        422, "invalid document: commit.ancestors: disagrees")  # fmt: skip
    answer = as_api_error(errors.InvalidReference("abcd is ambiguous", candidates=["a", "b"]))
    assert (answer.status, answer.detail, answer.extra) == (
        400, "abcd is ambiguous", {"candidates": ["a", "b"]})  # fmt: skip
    assert as_api_error(errors.NotFound("no job 7")).status == 404
    assert as_api_error(errors.Conflict("job 7 is done")).status == 409
