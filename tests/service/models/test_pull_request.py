"""service/models/pull_request.py: a pull request's runs are stored on the branch pull/<number>;
on the migrated database a pull request is unique per repository by number (the same number in
another repository is another one), its comment id holds GitHub's ids past 32 bits, and it goes
with its repository."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.models import PullRequest, Repository
from service.models.pull_request import PULL_PREFIX, pull_branch
from tests.service.models.conftest import added, count


def pull(repo: Repository, number: int = 7, **kw: object) -> PullRequest:
    return PullRequest(repository_id=repo.id, number=number, state="open", head_sha="a" * 40,
                       base_ref="main", **kw)  # fmt: skip


def test_a_pull_requests_runs_are_on_pull_slash_its_number() -> None:
    assert pull_branch(12) == "pull/12"
    assert PULL_PREFIX == "pull/" and pull_branch(1).startswith(PULL_PREFIX)


def test_a_number_is_one_pull_request_per_repository(session: Session, repo: Repository) -> None:
    fork = added(session, Repository(name="fork/kernels"))
    added(session, pull(repo))
    added(session, pull(fork))
    with pytest.raises(IntegrityError):
        added(session, pull(repo))
    session.rollback()


def test_the_comment_id_holds_ids_past_32_bits(session: Session, repo: Repository) -> None:
    row = added(session, pull(repo, comment_id=2**40 + 1))
    session.commit()
    session.expire_all()
    read = session.get(PullRequest, row.id)
    assert read.comment_id == 2**40 + 1
    assert read.title == "" and read.updated_at.tzinfo is not None


def test_a_pull_request_goes_with_its_repository(session: Session, repo: Repository) -> None:
    added(session, pull(repo))
    session.delete(repo)
    session.flush()
    assert count(session, PullRequest) == 0
