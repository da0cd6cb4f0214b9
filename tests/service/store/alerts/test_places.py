"""Where an alert shows (service.store.alerts.places), on SQLite and PostgreSQL: at the commit
whose run opened it, or, once a bisection named an earlier first bad commit, at that commit too,
with the measured head saying it was bisected there; at the commit that fixed it; the regressions
a bisection moved taken out of the head run's counts; and the trend's markers placed at the
first bad commit, its time deciding whether a marker is in the window. The alerts are placed by
hand on runs stored through the ingest, as an analysis, a bisection and a fix would place them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.models import Alert, Run, Series
from service.store.alerts.places import alert_markers, alerts_at_commit, inherited, without_bisected
from tests.documents import BASE_TIME, sha_for
from tests.service.store.conftest import StoreLine


def open_alert(
    session: Session,
    run_id: int,
    series_id: int,
    *,
    first_bad: int | None = None,
    fixed_by: int | None = None,
) -> int:
    run = session.get(Run, run_id)
    assert run is not None
    alert = Alert(repository_id=run.repository_id, series_id=series_id, run_id=run.id,
                  commit_id=run.commit_id, branch=run.branch, state="open", change=0.08,
                  summary=f"alert at run {run_id}", first_bad_commit_id=first_bad,
                  fixed_by_commit_id=fixed_by)  # fmt: skip
    session.add(alert)
    session.flush()
    return alert.id


@pytest.fixture
def placed(factory: sessionmaker[Session], store_line: StoreLine) -> dict[str, int]:
    """Commits c0-c3 measuring kernels a and b; alerts: `bisected` opened at c3 with its first
    bad commit c1, `plain` opened at c2, `fixed` opened at c1 and fixed by c3, `own` opened at c2
    with the bisection naming c2 itself."""
    runs = store_line([{"a": 100.0, "b": 50.0}] * 4)
    with factory() as session, session.begin():
        commit = {f"c{i}": session.get(Run, r).commit_id for i, r in enumerate(runs)}
        a, b = session.scalars(select(Series.id).order_by(Series.kernel)).all()
        return {
            **commit,
            "a": a,
            "b": b,
            "bisected": open_alert(session, runs[3], a, first_bad=commit["c1"]),
            "plain": open_alert(session, runs[2], a),
            "fixed": open_alert(session, runs[1], b, fixed_by=commit["c3"]),
            "own": open_alert(session, runs[2], b, first_bad=commit["c2"]),
        }


def test_a_commit_shows_the_alerts_it_opened_started_and_fixed(
    factory: sessionmaker[Session], placed: dict[str, int]
) -> None:
    def at(commit: str) -> list[tuple[int, str]]:
        with factory() as session:
            return [(a.id, why) for a, why in alerts_at_commit(session, placed[commit])]

    assert at("c3") == [
        (placed["bisected"], "opened here, bisected to an earlier commit"),
        (placed["fixed"], "fixed here"),
    ]
    assert at("c1") == [
        (placed["bisected"], "started here (bisection)"),
        (placed["fixed"], "opened here"),
    ]
    # A bisection that named the measured head itself moved nothing.
    assert at("c2") == [(placed["plain"], "opened here"), (placed["own"], "opened here")]
    assert at("c0") == []


def test_a_head_inherits_only_the_alerts_bisected_to_an_earlier_commit(
    factory: sessionmaker[Session], placed: dict[str, int]
) -> None:
    with factory() as session:
        moved = inherited(session, [placed["c3"], placed["c2"], placed["c1"]])
    assert moved == {(placed["c3"], "main"): {sha_for("c1"): [placed["a"]]}}


def test_regressions_bisected_away_leave_the_runs_counts_and_zeros_are_dropped() -> None:
    counts = {"regressed": 2, "unchanged": 5, "improved": 0}
    assert without_bisected(counts, 0) == {"regressed": 2, "unchanged": 5}
    assert without_bisected(counts, 1) == {"regressed": 1, "unchanged": 5}
    assert without_bisected(counts, 2) == {"unchanged": 5}
    assert without_bisected(counts, 3) == {"unchanged": 5}  # never below zero
    assert without_bisected({"unchanged": 5}, 2) == {"unchanged": 5}
    assert counts["regressed"] == 2  # the caller's dict is left as it was


def test_a_marker_sits_at_the_first_bad_commit_and_its_time_decides_the_window(
    factory: sessionmaker[Session], placed: dict[str, int]
) -> None:
    series = [placed["a"], placed["b"]]
    with factory() as session:
        every = alert_markers(session, series, "main", BASE_TIME)
        late = alert_markers(session, series, "main", BASE_TIME + timedelta(minutes=2))
        elsewhere = alert_markers(session, series, "release", BASE_TIME)
    markers = {row[0]: (row[2], row[6]) for row in every}
    assert markers == {
        placed["bisected"]: (sha_for("c1"), sha_for("c3")),  # at c1, measured at c3
        placed["plain"]: (sha_for("c2"), None),
        placed["fixed"]: (sha_for("c1"), None),
        placed["own"]: (sha_for("c2"), None),  # bisected to its own head: no head named apart
    }
    assert [row[3] for row in every if row[0] == placed["bisected"]] == [
        BASE_TIME + timedelta(minutes=1)
    ]
    # The bisected alert's head (c3) is in the window, its first bad commit (c1) is not.
    assert {row[0] for row in late} == {placed["plain"], placed["own"]}
    assert elsewhere == []
