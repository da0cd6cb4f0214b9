"""service/models/repository.py on the migrated database: a repository's name is unique; a new
repository asks for one job per pushed commit that any runner may take ([{}]); a commit's sha is
unique within its repository, not across repositories; a commit written with only its sha and
time has empty parents, ancestors and author; deleting a repository deletes what hangs from it."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.models import Commit, Job, Repository, Run, Series
from tests.service.models.conftest import added, commit_row, count, run_row, series_row


def test_a_second_repository_of_the_same_name_is_refused(session: Session) -> None:
    added(session, Repository(name="acme/kernels"))
    with pytest.raises(IntegrityError):
        added(session, Repository(name="acme/kernels"))
    session.rollback()


def test_a_new_repository_queues_one_job_any_runner_may_take(session: Session) -> None:
    repo = added(session, Repository(name="acme/kernels"))
    assert repo.runner_label_sets == [{}]
    assert repo.clone_url is None


def test_a_sha_is_unique_within_its_repository(session: Session, repo: Repository) -> None:
    added(session, commit_row(repo, "b" * 40))
    with pytest.raises(IntegrityError):
        added(session, commit_row(repo, "b" * 40))
    session.rollback()


def test_the_same_sha_may_be_in_two_repositories(session: Session, repo: Repository) -> None:
    fork = added(session, Repository(name="fork/kernels"))
    added(session, commit_row(repo, "b" * 40))
    added(session, commit_row(fork, "b" * 40))
    assert count(session, Commit) == 2


def test_a_commit_written_with_only_its_sha_has_empty_history_and_author(
    session: Session, repo: Repository
) -> None:
    commit = added(session, commit_row(repo))
    session.commit()
    session.expire_all()
    read = session.get(Commit, commit.id)
    assert (read.parents, read.ancestors) == ([], [])
    assert (read.author_name, read.author_email, read.message) == ("", "", "")


def test_deleting_a_repository_deletes_its_commits_runs_series_and_jobs(
    session: Session, repo: Repository, commit: Commit
) -> None:
    added(session, run_row(repo, commit))
    added(session, series_row(repo))
    added(session, Job(repository_id=repo.id, commit_sha=commit.sha, branch="main"))
    session.delete(repo)
    session.flush()
    assert [count(session, m) for m in (Commit, Run, Series, Job)] == [0, 0, 0, 0]
