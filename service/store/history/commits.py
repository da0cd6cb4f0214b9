"""Finding a commit by (short) sha and reading every result stored at it."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.orm import Session, defer

from service.core.errors import InvalidReference, NotFound
from service.models import (
    Commit,
    Repository,
    Result,
)
from service.schemas import metrics as m

_HEX = re.compile(r"\A[0-9a-f]{4,40}\Z")  # \Z: no trailing newline, as $ would let pass


def resolve_commit(session: Session, sha: str, repository: str | None) -> tuple[Commit, str]:
    """The one commit a full or unique short sha names, with its repository's name."""
    prefix = sha.lower()
    if not _HEX.match(prefix):
        raise InvalidReference(f"{sha[:50]!r} is not a commit sha: give 4 to 40 hex digits")
    # A range on the sha index instead of LIKE: 'g' sorts after every hex digit.
    # Without the ancestry (up to 1,000 shas of JSON): a read of the commit seldom needs it,
    # and touching it loads it then.
    query = (
        select(Commit, Repository.name)
        .options(defer(Commit.ancestors))
        .join(Repository, Repository.id == Commit.repository_id)
        .where(Commit.sha >= prefix, Commit.sha < prefix + "g")
        .order_by(Commit.sha)
        .limit(21)
    )
    if repository is not None:
        query = query.where(Repository.name == repository)
    rows = session.execute(query).all()
    if not rows:
        where = f" in {repository}" if repository else ""
        raise NotFound(f"no commit {sha}{where} has results yet")
    if len(rows) > 1:
        candidates = [{"sha": c.sha, "repository": name} for c, name in rows[:20]]
        raise InvalidReference(
            f"{sha} is ambiguous: it matches {len(rows) if len(rows) <= 20 else 'over 20'} "
            "commits; give more digits or ?repository=",
            candidates=candidates,
        )
    return rows[0][0], rows[0][1]


def commit_public(commit: Commit, repository: str) -> m.CommitPublic:
    return m.CommitPublic(
        sha=commit.sha,
        repository=repository,
        parents=list(commit.parents),
        author_name=commit.author_name,
        author_email=commit.author_email,
        message=commit.message,
        committed_at=commit.committed_at,
    )


def statistics(r: Result | Row[Any]) -> m.Statistics:
    """From a result, or from a row of its statistic columns under the same names."""
    return m.Statistics(**statistics_data(r))


def statistics_data(r: Result | Row[Any]) -> dict[str, Any]:
    """m.Statistics' fields as a dict."""
    return {
        "n": r.n,
        "median": r.median,
        "q1": r.q1,
        "q3": r.q3,
        "min": r.min,
        "max": r.max,
        "mean": r.mean,
        "stdev": r.stdev,
        "rel_iqr": (r.q3 - r.q1) / r.median if r.median else 0.0,
    }
