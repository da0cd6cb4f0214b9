"""A document's first-parent line against the lines stored (service.store.history.lines), on
SQLite and PostgreSQL, through the ingest and by itself: lines that agree where both reach are
taken (a runner may cap its line); a commit sent again with another line, a line that the
nearest stored ancestor's own line does not continue, and two commits each among the other's
ancestors are refused, naming the field's index; and the nearest stored ancestor is found
however far back it is."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from service.core.errors import InvalidDocument
from service.models import Commit, Repository, Run
from service.schemas.document import CommitIn, RunDocument
from service.store.history.lines import NEAR, check_line, parent_columns
from tests.documents import document, sha_for
from tests.service.store.conftest import Store


def on_line(label: str, line: list[str], **kw: Any) -> dict[str, Any]:
    return document(commit=label, parents=line[:1], ancestors=line, **kw)


def commit_in(label: str, line: list[str]) -> CommitIn:
    return RunDocument.model_validate(on_line(label, line)).commit


def runs(factory: sessionmaker[Session]) -> int:
    with factory() as session:
        return session.scalar(select(func.count()).select_from(Run)) or 0


def test_lines_that_agree_where_both_reach_are_taken(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(on_line("c0", []))
    store(on_line("c1", ["c0"]))
    store(on_line("c3", ["c2"]))  # capped at one ancestor, c2 never run
    store(on_line("c4", ["c3", "c2", "c1", "c0"]))
    store(on_line("c2", ["c1", "c0"]))
    store(on_line("c3", ["c2", "c1"]))  # the same commit again, capped otherwise
    assert runs(factory) == 6


def test_a_commit_sent_again_with_another_line_is_refused(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(on_line("c2", ["c1", "c0"]))
    with pytest.raises(InvalidDocument) as refused:
        store(on_line("c2", ["c1", "x"]))
    assert str(refused.value) == (
        f"commit.ancestors[1] is {sha_for('x')[:12]}, but the line stored for commit "
        f"{sha_for('c2')[:12]} has {sha_for('c0')[:12]} there: a commit's first-parent line "
        "never changes"
    )
    assert runs(factory) == 1


def test_a_line_the_nearest_stored_ancestors_line_does_not_continue_is_refused(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(on_line("a0", []))
    store(on_line("a1", ["a0"]))
    # The parent p was never stored: a1, one further back, is the ancestor to agree with.
    with pytest.raises(InvalidDocument) as refused:
        store(on_line("n", ["p", "a1", "zz"]))
    assert str(refused.value).startswith(
        f"commit.ancestors[2] is {sha_for('zz')[:12]}, but the line stored for its ancestor "
        f"{sha_for('a1')[:12]} (commit.ancestors[1]) has {sha_for('a0')[:12]} there"
    )
    store(on_line("n", ["p", "a1", "a0"]))


def test_two_commits_each_among_the_others_ancestors_are_a_cycle(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(on_line("b", ["a"]))
    with pytest.raises(InvalidDocument, match=r"commit.ancestors\[0\] .* \(a cycle\)"):
        store(on_line("a", ["b"]))
    assert runs(factory) == 1


def test_the_nearest_stored_ancestor_is_found_beyond_the_first_window(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(on_line("root", ["r0"]))
    unknown = [f"u{i}" for i in range(NEAR + 6)]
    with factory() as session:
        repository_id = session.scalars(select(Repository.id)).one()
        # Without the parent's row read beforehand (parent None): the lookup alone finds it.
        check_line(session, repository_id, commit_in("tip", [*unknown, "root", "r0"]), [])
        with pytest.raises(InvalidDocument, match=rf"commit.ancestors\[{NEAR + 7}\] is "):
            check_line(session, repository_id, commit_in("tip", [*unknown, "root", "r9"]), [])


def test_a_commit_without_a_line_reads_no_parent_and_checks_nothing(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(on_line("b", ["a"]))
    lone = commit_in("a", [])
    assert parent_columns(1, lone) == []
    with factory() as session:
        repository_id = session.scalars(select(Repository.id)).one()
        check_line(session, repository_id, lone, session.scalars(select(Commit.ancestors)).one())
