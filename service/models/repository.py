"""Repositories and the commits kernelwatch has seen in them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base, WholeJSON, utcnow


class Repository(Base):
    __tablename__ = "repositories"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    clone_url: Mapped[str | None] = mapped_column(String(1000))
    # One job per label set per pushed commit; [{}] means one job that any runner may take.
    runner_label_sets: Mapped[list[Any]] = mapped_column(default=lambda: [{}])
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Commit(Base):
    __tablename__ = "commits"
    __table_args__ = (
        UniqueConstraint("repository_id", "sha"),
        # Short-sha lookups arrive without a repository: a range scan on sha alone
        # (sha >= prefix AND sha < prefix-successor) works on both backends with a plain b-tree.
        Index("ix_commits_sha", "sha"),
        # The trends page's change points: those of the commits since its oldest point.
        Index("ix_commits_committed_at", "committed_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"))
    sha: Mapped[str] = mapped_column(String(40))
    parents: Mapped[list[Any]] = mapped_column(default=list)
    # First-parent ancestors as the runner read them from git, nearest first (bounded): the
    # baseline walks this line even across commits that were never run.
    ancestors: Mapped[list[Any]] = mapped_column(WholeJSON, default=list)
    author_name: Mapped[str] = mapped_column(String(300), default="")
    author_email: Mapped[str] = mapped_column(String(300), default="")
    message: Mapped[str] = mapped_column(Text, default="")
    committed_at: Mapped[datetime]
