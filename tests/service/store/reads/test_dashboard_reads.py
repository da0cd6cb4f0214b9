"""The dashboards' reads (service.store.reads.dashboard_reads), on SQLite and PostgreSQL, over
runs stored through the ingest and judged by the service's own analysis: the branch lists
count only the newest runs (BRANCH_WINDOW); the newest runs come with their verdict counts, the
regressions a bisection moved to an earlier commit counted there instead; alerts are listed
newest first by state, repository, series or a commit they were found at or bisected to; the
queue's counts and live jobs; and the trend page's choices, which leave out a measure's series
(it has no points), and the commits, repository and redefinitions it suggests or marks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from service.models import Alert, Commit, Repository, Run, Series, Verdict
from service.store.history.series import new_measure_series
from service.store.jobs import queue
from service.store.reads import dashboard_reads as reads
from tests.documents import BASE_TIME, document, sha_for
from tests.service.store.conftest import Store, StoreLine


def repository_id(session: Session, name: str = "acme/kernels") -> int:
    return session.scalars(select(Repository.id).where(Repository.name == name)).one()


@pytest.fixture
def regressed(factory: sessionmaker[Session], store_line: StoreLine) -> list[int]:
    """c0-c4 measuring kernels a and b, a 10% slower at c4: an alert there. The runs' ids."""
    return store_line([{"a": 100.0, "b": 50.0}] * 4 + [{"a": 110.0, "b": 50.0}], analyse=True)


def test_branches_count_the_newest_runs_only(
    factory: sessionmaker[Session], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for label, branch, minutes in [("c0", "main", 0), ("c1", "main", 1), ("r0", "release", 2),
                                   ("c2", "main", 3)]:  # fmt: skip
        store(document(commit=label, branch=branch, minutes=minutes))
    with factory() as session:
        rows = [(b.branch, b.runs, b.newest_sha) for b in reads.branches(session)]
        assert rows == [("main", 3, sha_for("c2")), ("release", 1, sha_for("r0"))]
        assert sorted(reads.repository_branches(session, repository_id(session))) == [
            "main",
            "release",
        ]
        monkeypatch.setattr(reads, "BRANCH_WINDOW", 2)
        assert {(b.branch, b.runs) for b in reads.branches(session)} == {
            ("main", 1),
            ("release", 1),
        }
        assert sorted(reads.repository_branches(session, repository_id(session))) == [
            "main",
            "release",
        ]
        monkeypatch.setattr(reads, "BRANCH_WINDOW", 1)
        assert reads.repository_branches(session, repository_id(session)) == ["main"]


def test_recent_runs_count_their_verdicts_less_the_regressions_bisected_away(
    factory: sessionmaker[Session], regressed: list[int]
) -> None:
    with factory() as session:
        newest, before = reads.recent_runs(session, limit=2)
    assert (newest.sha, before.sha) == (sha_for("c4"), sha_for("c3"))
    assert newest.subject == "commit c4"
    assert (newest.verdicts, newest.bisected) == ({"regressed": 1, "unchanged": 1}, {})
    assert before.verdicts == {"unchanged": 2}
    with factory() as session, session.begin():
        c2 = session.scalars(select(Commit.id).where(Commit.sha == sha_for("c2"))).one()
        session.execute(update(Alert).values(first_bad_commit_id=c2))
    with factory() as session:
        newest = reads.recent_runs(session, limit=1)[0]
    assert (newest.verdicts, newest.bisected) == ({"unchanged": 1}, {sha_for("c2"): 1})


def test_alerts_are_found_by_state_series_and_the_commit_they_were_found_or_bisected_at(
    factory: sessionmaker[Session], regressed: list[int]
) -> None:
    with factory() as session, session.begin():
        alert = session.scalars(select(Alert)).one()
        other = Alert(repository_id=alert.repository_id, series_id=alert.series_id,
                      run_id=alert.run_id, commit_id=alert.commit_id, branch="main",
                      change=0.3, state="fixed")  # fmt: skip
        session.add(other)
        session.flush()
        alert.first_bad_commit_id = session.scalar(
            select(Commit.id).where(Commit.sha == sha_for("c2"))
        )
        ids = (alert.id, other.id)
    with factory() as session:
        repo = repository_id(session)

        def found(**kw: object) -> list[int]:
            return [a.id for a in reads.alerts(session, limit=10, **kw)]  # type: ignore[arg-type]

        assert found(states=[], repository_id=None) == [ids[1], ids[0]]
        assert found(states=["suspected"], repository_id=repo) == [ids[0]]
        assert found(states=[], repository_id=repo + 1) == []
        assert found(states=[], repository_id=None, series_id=alert.series_id + 1) == []
        assert found(states=[], repository_id=None, sha_prefix=sha_for("c2")[:7]) == [ids[0]]
        assert found(states=[], repository_id=None, sha_prefix=sha_for("c4")[:7]) == list(
            reversed(ids)
        )
        assert found(states=[], repository_id=None, sha_prefix="%") == []  # no LIKE pattern
        assert [a.id for a in reads.active_alerts(session)] == [ids[0]]


def test_the_queue_counts_jobs_by_state_and_lists_the_live_ones_newest_first(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="c0"))
    with factory() as session, session.begin():
        repo = repository_id(session)
        jobs = [
            queue.enqueue(session, repository_id=repo, sha=c * 40, branch="main",
                          label_sets=[{}], max_attempts=1)[0]
            for c in "abcd"
        ]  # fmt: skip
        jobs[0].state, jobs[1].state = "succeeded", "running"
    with factory() as session:
        counts, live = reads.queue(session)
        assert counts == {"succeeded": 1, "running": 1, "queued": 2}
        assert [j.commit_sha[0] for j in live] == ["d", "c", "b"]
        assert len(reads.queue(session, limit=1)[1]) == 1


def test_the_trend_choices_leave_out_a_measures_series(
    factory: sessionmaker[Session], store: Store
) -> None:
    run_id = store(document(commit="c0", medians={"b": 50.0, "a": 100.0}))
    with factory() as session, session.begin():
        run = session.get(Run, run_id)
        new_measure_series(session, run, "gemm_fwd", {"act": "a"}, "peak_memory_bytes", "byte")
        repo = repository_id(session)
        assert reads.metrics(session, repo) == ["duration"]
        assert reads.has_metric(session, repo, "peak_memory_bytes")  # it exists, drawn or not
        assert not reads.has_metric(session, repo, "throughput")
        options = reads.series_options(session, repo, "duration")
        assert [o.kernel for o in options] == ["a", "b"]
        assert reads.series_options(session, repo, "peak_memory_bytes") == []
        chosen = reads.series_rows(session, [options[1].id, options[0].id])
        assert [s.id for s in chosen] == sorted(o.id for o in options)
        assert reads.gpu_names(session, repo) == [("00000000000000aa", "NVIDIA H100 80GB HBM3")]


def test_the_suggested_commits_and_repository_are_the_newest_runs(
    factory: sessionmaker[Session], store: Store
) -> None:
    with factory() as session:
        assert reads.newest_repository(session) is None
    with factory() as session, session.begin():
        session.add(Repository(name="aaa/no-runs"))
    with factory() as session:
        assert reads.newest_repository(session) == "aaa/no-runs"  # first by name: no runs yet
    for label in ("c0", "c1", "c0", "c2"):
        store(document(commit=label, repository="acme/kernels"))
    store(document(commit="x0", repository="acme/other"))
    with factory() as session:
        assert reads.newest_repository(session) == "acme/other"
        assert reads.repositories(session) == ["aaa/no-runs", "acme/kernels", "acme/other"]
        repo = repository_id(session)
        assert reads.recent_commits(session, repo) == [sha_for(c) for c in ("c2", "c0", "c1")]
        assert reads.recent_commits(session, None, limit=2) == [sha_for("x0"), sha_for("c2")]
        assert reads.newest_branch(session, repo) == "main"


def test_a_redefinition_is_marked_at_the_commit_of_the_takeover_on_its_branch(
    factory: sessionmaker[Session], store_line: StoreLine
) -> None:
    store_line([{"old": 100.0}, {"new": 100.0}], analyse=True)
    with factory() as session, session.begin():
        old, new = (
            session.scalars(select(Series.id).where(Series.kernel == k)).one()
            for k in ("old", "new")
        )
        # As the analysis marks a workload redefined in place (its new series took over).
        session.execute(
            update(Verdict).where(Verdict.series_id == new).values(redefined_from_series_id=old)
        )
    with factory() as session:
        assert reads.redefinitions(session, [new, old], "main") == [
            (new, old, sha_for("c1"), BASE_TIME + timedelta(minutes=1))
        ]
        assert reads.redefinitions(session, [new], "release") == []
        assert reads.redefinitions(session, [], "main") == []
