"""Finding a series and reading its history (service.store.history.series), on SQLite and
PostgreSQL, over runs stored through the ingest and judged by the service's own analysis: a
query names one series or lists its candidates; a series' default branch is that of its newest
result; a history is the last `limit` results oldest first, each with its verdict once decided
and its samples only when asked for, with the change points from its oldest point on (one a
bisection moved naming where to) and whether change points are still to come; and a measure's
series is made once under the identity its run, workload and measure give it."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.core.errors import InvalidReference, NotFound
from service.evaluation.backlog import segment_pending
from service.models import Alert, Commit, Run, Series
from service.models.series import MEASURE_METHOD
from service.store.history.series import (
    default_branch,
    find_series,
    histories_data,
    history,
    measure_identity,
    measure_series,
    new_measure_series,
)
from tests.documents import document, sha_for
from tests.service.store.conftest import Store, StoreLine

PARAMS = {"m": 1024, "n": 1024, "k": 1024}  # tests.documents' gemm_fwd, beside its act=kernel


def series_named(session: Session, kernel: str) -> tuple[Series, str]:
    return find_series(session, series_id=None, filters={"kernel": kernel}, params=None)


def test_a_query_names_one_series_or_lists_the_candidates(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="c0", medians={"a": 100.0, "b": 50.0}))
    store(document(commit="c0", repository="acme/other", medians={"a": 100.0}))
    with factory() as session:
        by_workload = {"workload": "gemm_fwd", "repository": "acme/kernels", "suite": None}
        with pytest.raises(InvalidReference, match="2 series match") as several:
            find_series(session, series_id=None, filters=by_workload, params=None)
        kernels = [c["kernel"] for c in several.value.extra["candidates"]]
        assert kernels == ["a", "b"]
        found, repository = find_series(
            session, series_id=None, filters=by_workload, params={**PARAMS, "act": "b"}
        )
        assert (found.kernel, repository) == ("b", "acme/kernels")
        again, _ = find_series(session, series_id=found.id, filters={}, params=None)
        assert again.id == found.id
        other, repository = find_series(
            session, series_id=None, filters={"kernel": "a", "repository": "acme/other"},
            params=None,
        )  # fmt: skip
        assert repository == "acme/other" and other.kernel == "a"
        with pytest.raises(NotFound, match="no series matches"):
            find_series(session, series_id=None, filters={"kernel": "c"}, params=None)


def test_a_series_default_branch_is_that_of_its_newest_result(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="c0", minutes=0, branch="main"))
    store(document(commit="c1", minutes=5, branch="release"))
    store(document(commit="c2", minutes=3, branch="main"))  # received last, committed earlier
    with factory() as session:
        series, _ = series_named(session, "gemm_bias_act_f32")
        assert default_branch(session, series) == "release"
        bare = Series(id=10_000, repository_id=series.repository_id)
        with pytest.raises(NotFound, match="has no results yet"):
            default_branch(session, bare)


def test_a_history_is_the_last_results_oldest_first_with_samples_only_when_asked(
    factory: sessionmaker[Session], store_line: StoreLine
) -> None:
    store_line([{"a": 100.0 + i} for i in range(5)])
    with factory() as session:
        series, repository = series_named(session, "a")
        short = history(session, series, repository, "main", 3, with_samples=False)
        full = history(session, series, repository, "main", 10, with_samples=True)
        empty = history(session, series, repository, "release", 10, with_samples=False)
    assert [p.commit for p in short.points] == [sha_for(f"c{i}") for i in (2, 3, 4)]
    assert [p.statistics.median for p in short.points] == pytest.approx([102, 103, 104], rel=0.01)
    assert short.points[0].subject == "commit c2"  # the message's first line
    assert all(p.samples is None for p in short.points)
    assert len(full.points) == 5 and all(len(p.samples) == 60 for p in full.points)
    assert empty.points == []


def test_each_point_carries_its_verdict_once_the_analysis_decided_one(
    factory: sessionmaker[Session], store_line: StoreLine, store: Store
) -> None:
    store_line([{"a": 100.0}] * 2, analyse=True)
    store(document(commit="c2", parents=["c1"], ancestors=["c1", "c0"], minutes=2,
                   medians={"a": 100.0}))  # fmt: skip
    with factory() as session:
        series, repository = series_named(session, "a")
        points = history(session, series, repository, "main", 10, with_samples=False).points
    assert [p.verdict for p in points] == ["new", "unchanged", None]


def test_change_points_show_from_the_oldest_point_on_and_while_pending_say_so(
    factory: sessionmaker[Session], store_line: StoreLine
) -> None:
    # A 10% step at c5: the analysis opens an alert there, the segmentation a change point.
    runs = store_line([{"a": 100.0}] * 5 + [{"a": 110.0}] * 5, analyse=True)
    with factory() as session:
        series, repository = series_named(session, "a")
        assert history(session, series, repository, "main", 10, False).change_points_pending
    segment_pending(factory)
    with factory() as session, session.begin():
        alert = session.scalars(select(Alert)).one()
        assert alert.commit_id == session.scalar(select(Run.commit_id).where(Run.id == runs[5]))
        # The bisection of the push that c5 headed found c4 as the first bad commit.
        alert.first_bad_commit_id = session.scalar(
            select(Commit.id).where(Commit.sha == sha_for("c4"))
        )
    with factory() as session:
        wide, narrow = (
            histories_data(session, [series], repository, "main", limit) for limit in (6, 4)
        )
        assert histories_data(session, [], repository, "main", 4) == []
    (shift,) = wide[0]["change_points"]
    assert (shift["commit"], shift["bisected_to"]) == (sha_for("c5"), sha_for("c4"))
    assert shift["change"] == pytest.approx(0.1, abs=0.01)
    assert wide[0]["change_points_pending"] is False
    # Four points start at c6: the shift before them is not theirs to show.
    assert narrow[0]["change_points"] == []


def test_a_measures_series_is_made_once_under_its_identity(
    factory: sessionmaker[Session], store: Store
) -> None:
    run_id = store(document(commit="c0"))
    params = {"m": 1, "n": 2}
    with factory() as session, session.begin():
        run = session.get(Run, run_id)
        identity = measure_identity(run, "gemm_fwd", '{"m":1,"n":2}', "peak_memory_bytes")
        assert measure_series(session, [identity]) == {}
        made = new_measure_series(session, run, "gemm_fwd", params, "peak_memory_bytes", "byte")
        again = new_measure_series(session, run, "gemm_fwd", params, "peak_memory_bytes", "byte")
        assert again.id == made.id
        assert (made.identity, made.kernel, made.metric, made.method, made.unit) == (
            identity,
            "",
            "peak_memory_bytes",
            MEASURE_METHOD,
            "byte",
        )
        other = measure_identity(run, "gemm_fwd", '{"m":1,"n":2}', "prepare_seconds")
        assert measure_series(session, [identity, other]) == {identity: made}
        assert measure_series(session, []) == {}
