"""A GitHub pull request kernelwatch measures: its head against the merge base on its target.

A PR's runs are stored on the branch `pull/<number>` (runs.pull_request set), so they never
join the target branch's history; their verdicts compare the head with the merge base
(runs.merge_base_sha, from the runner's `git merge-base`), and they open no alerts.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base, utcnow

PULL_PREFIX = "pull/"  # a pull request's runs' branch: pull/<number>


def pull_branch(number: int) -> str:
    """The branch name a pull request's runs are stored under."""
    return f"{PULL_PREFIX}{number}"


class PullRequest(Base):
    __tablename__ = "pull_requests"
    __table_args__ = (UniqueConstraint("repository_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"))
    number: Mapped[int]
    state: Mapped[str] = mapped_column(String(20))  # open | closed | merged
    title: Mapped[str] = mapped_column(String(500), default="")
    head_sha: Mapped[str] = mapped_column(String(40))
    base_ref: Mapped[str] = mapped_column(String(255))
    # GitHub's id of the one comment kernelwatch keeps up to date on the PR, once posted.
    comment_id: Mapped[int | None] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
