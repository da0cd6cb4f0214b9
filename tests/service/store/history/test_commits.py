"""Finding a commit by its sha and reading its results' statistics
(service.store.history.commits), on SQLite and PostgreSQL, over runs stored through the ingest:
a full or unique short sha of 4 to 40 hex digits in either case finds the commit with its
repository's name; anything else is no sha; an unknown one is not found; an ambiguous one lists
its candidates (at most 20) unless a repository tells them apart; and a result's statistics
carry the relative spread (q3 - q1) / median, zero for a median of zero."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.core.errors import InvalidReference, NotFound
from service.models import Result
from service.store.history.commits import commit_public, resolve_commit, statistics
from tests.documents import document, sha_for
from tests.service.store.conftest import Store

TWIN_A = "abcd" + "0" * 36
TWIN_B = "abcd" + "1" * 36


def test_a_full_or_unique_short_sha_in_either_case_finds_the_commit(
    factory: sessionmaker[Session], store: Store
) -> None:
    sha = sha_for("c1")
    store(document(commit="c1", parents=["c0"], repository="acme/one"))
    with factory() as session:
        for given in (sha, sha[:4], sha[:12].upper()):
            found, repository = resolve_commit(session, given, None)
            assert (found.sha, repository) == (sha, "acme/one")
        public = commit_public(found, repository)
    assert public.parents == [sha_for("c0")]
    assert public.message.startswith("commit c1")


@pytest.mark.parametrize("given", ["abc", "xyz123", "a" * 41, "abcd-123", ""])
def test_what_is_no_sha_is_an_invalid_reference(factory: sessionmaker[Session], given: str) -> None:
    with factory() as session, pytest.raises(InvalidReference, match="is not a commit sha"):
        resolve_commit(session, given, None)


def test_an_unknown_sha_is_not_found_naming_the_repository_asked_for(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit=TWIN_A, repository="acme/one"))
    with factory() as session:
        with pytest.raises(NotFound, match=f"no commit {'f' * 8} has results yet"):
            resolve_commit(session, "f" * 8, None)
        with pytest.raises(NotFound, match=f"no commit {TWIN_A[:8]} in acme/two"):
            resolve_commit(session, TWIN_A[:8], "acme/two")


def test_an_ambiguous_sha_lists_its_candidates_unless_a_repository_parts_them(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit=TWIN_A, repository="acme/one"))
    store(document(commit=TWIN_B, repository="acme/two"))
    with factory() as session:
        with pytest.raises(InvalidReference, match="matches 2 commits") as ambiguous:
            resolve_commit(session, "abcd", None)
        assert ambiguous.value.extra["candidates"] == [
            {"sha": TWIN_A, "repository": "acme/one"},
            {"sha": TWIN_B, "repository": "acme/two"},
        ]
        found, repository = resolve_commit(session, "ABCD", "acme/two")
        assert (found.sha, repository) == (TWIN_B, "acme/two")


def test_over_twenty_matches_name_twenty_candidates(
    factory: sessionmaker[Session], store: Store
) -> None:
    for i in range(21):
        store(document(commit=f"abcd{i:036x}"))
    with factory() as session, pytest.raises(InvalidReference, match="over 20") as ambiguous:
        resolve_commit(session, "abcd", None)
    assert len(ambiguous.value.extra["candidates"]) == 20


def test_statistics_carry_the_relative_spread_and_zero_for_a_zero_median(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="c0", medians={"k": 100.0}))
    with factory() as session:
        result = session.scalars(select(Result)).one()
        columns = session.execute(select(Result.n, Result.median, Result.q1, Result.q3,
                                         Result.min, Result.max, Result.mean,
                                         Result.stdev)).one()  # fmt: skip
    from_row, from_result = statistics(columns), statistics(result)
    assert from_row == from_result
    assert from_row.rel_iqr == pytest.approx((result.q3 - result.q1) / result.median)
    assert from_row.rel_iqr > 0 and from_row.n == 60
    flat = Result(n=3, median=0.0, q1=0.0, q3=1.0, min=0.0, max=1.0, mean=0.3, stdev=0.5)
    assert statistics(flat).rel_iqr == 0.0
