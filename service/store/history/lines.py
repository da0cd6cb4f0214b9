"""A document's first-parent line against the lines stored: one history, never a cycle.

A commit's `ancestors` is its first-parent line, nearest first (the runner reads it from git and
may cap it). Git history is immutable, so every stored line must agree with every other: the
same commit always lists the same line (one list may be a truncated copy of the other), and the
nearest stored ancestor's own line continues this one's. Checking that nearest ancestor is
enough to keep the whole store free of cycles: by induction, its line already agreed with its
own nearest stored ancestor's, and so on. The schema (CommitIn) refuses a commit that is its own
parent or ancestor, or a line that names a commit twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from service.core.errors import InvalidDocument
from service.core.sql import among
from service.models import Commit
from service.schemas.document import CommitIn

NEAR = 64  # ancestors looked up first: the nearest stored one is almost always among them


def check_line(
    session: Session,
    repository_id: int,
    commit: CommitIn,
    stored: Sequence[str],
    parent: tuple[bool, Sequence[str] | None] | None = None,
) -> None:
    """InvalidDocument (naming the field) when `commit.ancestors` disagrees with the line stored
    for the same commit (`stored`) or for its nearest stored ancestor. `parent`, where the
    caller read it already (parent_columns): whether the first parent is stored, and its line."""
    line = commit.ancestors
    if not line:
        return
    if stored:
        _agree(line, list(stored), 0, f"the line stored for commit {commit.sha[:12]}")
    if parent is not None and parent[0]:
        position, theirs = 0, list(parent[1] or [])
    else:
        # Not the parent (known absent), or not known: the nearest stored ancestor.
        skip = 1 if parent is not None else 0
        found = _nearest_stored(session, repository_id, line[skip:])
        if found is None:
            return
        position = found + skip
        theirs = list(
            session.scalar(
                select(Commit.ancestors).where(
                    Commit.repository_id == repository_id, Commit.sha == line[position]
                )
            )
            or []
        )
    nearest = line[position]
    if commit.sha in theirs:
        raise InvalidDocument(
            f"commit.ancestors[{position}] ({nearest[:12]}) is stored with this commit among its "
            "own ancestors: the two cannot both be ancestors of each other (a cycle)"
        )
    _agree(
        line[position + 1 :],
        theirs,
        position + 1,
        f"the line stored for its ancestor {nearest[:12]} (commit.ancestors[{position}])",
    )


def parent_columns(repository_id: int, commit: CommitIn) -> list[Any]:
    """Columns that read the first parent's row beside the commit's own (in the same statement
    as its insert: no round trip of their own): whether it is stored, and its line."""
    if not commit.ancestors:
        return []
    parent = aliased(Commit)
    where = (parent.repository_id == repository_id, parent.sha == commit.ancestors[0])
    return [
        select(parent.id).where(*where).scalar_subquery().label("parent_id"),
        select(parent.ancestors).where(*where).scalar_subquery().label("parent_ancestors"),
    ]


def _nearest_stored(session: Session, repository_id: int, line: list[str]) -> int | None:
    for start, stop in ((0, NEAR), (NEAR, len(line))):
        part = line[start:stop]
        if not part:
            return None
        found = set(
            session.scalars(
                select(Commit.sha).where(
                    Commit.repository_id == repository_id, among(session, Commit.sha, part)
                )
            )
        )
        for i, sha in enumerate(part):
            if sha in found:
                return start + i
    return None


def _agree(ours: list[str], theirs: list[str], offset: int, whose: str) -> None:
    """The two lines agree where both reach (either may be capped shorter)."""
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            raise InvalidDocument(
                f"commit.ancestors[{offset + i}] is {a[:12]}, but {whose} has {b[:12]} there: "
                "a commit's first-parent line never changes"
            )
