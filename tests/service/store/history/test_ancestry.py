"""A commit's first-parent ancestry and the series' nearest results along it
(service.store.history.ancestry), on SQLite and PostgreSQL, over runs stored through the ingest:
the line the runner sent, less the commits never measured, nearest first, or, without one, the
branch's earlier runs; per series the k nearest commits that measured it, however far back (the
window grows), the newer run of a commit measured twice; and the run after a commit on its
line, a side branch skipped, a commit without a line standing in only where none has one."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.models import Commit, Result, Series
from service.store.history.ancestry import ancestry, nearest_results, next_results
from tests.documents import document, sha_for
from tests.service.store.conftest import Store


def commit(session: Session, label: str) -> Commit:
    return session.scalars(select(Commit).where(Commit.sha == sha_for(label))).one()


def on_line(label: str, line: list[str], minutes: int, **kw: Any) -> dict[str, Any]:
    """A run of `label` whose first-parent line is `line`, nearest first."""
    return document(commit=label, parents=line[:1], ancestors=line, minutes=minutes, **kw)


def series_ids(session: Session) -> dict[str, int]:
    return dict(session.execute(select(Series.kernel, Series.id)).all())


def test_the_runners_line_gives_the_ancestry_without_commits_never_measured(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(on_line("c0", [], 0))
    # c1 was never run: only the lines of c2 and of the head name it.
    store(on_line("c2", ["c1", "c0"], 2))
    store(on_line("h", ["c2", "c1", "c0"], 3))
    with factory() as session:
        head = commit(session, "h")
        assert ancestry(session, head, "main") == [
            commit(session, "c2").id,
            commit(session, "c0").id,
        ]


def test_without_a_line_the_branchs_earlier_runs_stand_in_nearest_first(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="x0", minutes=0))
    store(document(commit="x1", minutes=1))
    store(document(commit="y", minutes=2, branch="release"))
    store(document(commit="head", minutes=3))
    store(document(commit="later", minutes=5))
    with factory() as session:
        found = ancestry(session, commit(session, "head"), "main")
        assert found == [commit(session, "x1").id, commit(session, "x0").id]


def test_each_series_gets_its_k_nearest_measured_commits_and_the_newer_of_two_runs(
    factory: sessionmaker[Session], store: Store
) -> None:
    line: list[str] = []
    runs = {}
    for i in range(6):
        label = f"c{i}"
        # Kernel b was measured at c0 and c1 only: its nearest results lie beyond the first
        # window of k commits.
        medians = {"a": 100.0 + i, "b": 50.0} if i < 2 else {"a": 100.0 + i}
        runs[label] = store(on_line(label, line[::-1], i, medians=medians, seed=i))
        if label == "c3":
            runs["c3 again"] = store(on_line(label, line[::-1], i, medians={"a": 200.0}))
        line.append(label)
    with factory() as session:
        ids = series_ids(session)
        line_ids = ancestry(session, commit(session, "c5"), "main")
        near = nearest_results(session, [ids["a"], ids["b"]], line_ids, k=2)
        assert nearest_results(session, [], line_ids, 2) == {}
        assert nearest_results(session, [ids["a"]], [], 2) == {}
        c3_again = session.scalars(select(Result.id).where(Result.run_id == runs["c3 again"]))
        c3_again_id = c3_again.one()
    assert [(cid, run) for _, cid, _, run in near[ids["a"]]] == [
        (line_ids[0], runs["c4"]),
        (line_ids[1], runs["c3 again"]),
    ]
    assert near[ids["a"]][1][0] == c3_again_id
    assert near[ids["a"]][1][2] > 150  # the newer run's median, not the first one's
    assert [(cid, run) for _, cid, _, run in near[ids["b"]]] == [
        (line_ids[3], runs["c1"]),
        (line_ids[4], runs["c0"]),
    ]


def test_the_next_result_is_the_nearest_descendant_on_the_heads_line(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(on_line("c0", [], 0, seed=0))
    store(on_line("c1", ["c0"], 1, seed=1))
    # Nearer in time than c2, but forked from c0: not on c1's line.
    store(on_line("side", ["c0"], 2, medians={"gemm_bias_act_f32": 300.0}))
    store(on_line("c2", ["c1", "c0"], 3, medians={"gemm_bias_act_f32": 110.0}))
    newer = store(on_line("c2", ["c1", "c0"], 3, medians={"gemm_bias_act_f32": 120.0}))
    store(on_line("c3", ["c2", "c1", "c0"], 4, seed=4))
    with factory() as session:
        (series_id,) = series_ids(session).values()
        after_c1 = next_results(session, commit(session, "c1"), "main", [series_id])
        newer_result = session.scalars(select(Result.id).where(Result.run_id == newer)).one()
        assert list(after_c1) == [series_id]
        result_id, median = after_c1[series_id]
        assert result_id == newer_result and median > 115
        assert next_results(session, commit(session, "c3"), "main", [series_id]) == {}
        assert next_results(session, commit(session, "c1"), "main", []) == {}


def test_a_later_commit_without_a_line_stands_in_where_no_descendant_has_one(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(on_line("c0", [], 0))
    c1 = store(on_line("c1", ["c0"], 1))
    unlined = store(document(commit="unlined", minutes=10))
    store(document(commit="earlier", minutes=-5))  # before the head: never its descendant
    with factory() as session:
        (series_id,) = series_ids(session).values()
        found = next_results(session, commit(session, "c1"), "main", [series_id])
        stand_in = session.scalars(select(Result.id).where(Result.run_id == unlined)).one()
        assert found[series_id][0] == stand_in
        # With a descendant on its line, c0's next result is c1's, the unlined commit aside.
        from_c0 = next_results(session, commit(session, "c0"), "main", [series_id])
        at_c1 = session.scalars(select(Result.id).where(Result.run_id == c1)).one()
        assert from_c0[series_id][0] == at_c1
