"""service/models/alert.py: the alert states, the ones a person may set (not "suspected", which
waits for the confirmation job, nor "dismissed", which it decides) and the active ones; on the
migrated database a new alert is suspected, by kernelwatch, with empty attribution and
bisection; an alert goes with its run, series and commit but outlives the other commits and the
confirmation job it names; its events go with it; a series has one change point per branch and
commit."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.models import Alert, AlertEvent, ChangePoint, Commit, Job, Repository, Run, Series
from service.models.alert import ACTIVE_STATES, ALERT_STATES, TRIAGE_STATES
from tests.service.models.conftest import added, commit_row, count


def alert_row(run: Run, series: Series, **kw: object) -> Alert:
    return Alert(repository_id=run.repository_id, series_id=series.id, run_id=run.id,
                 commit_id=run.commit_id, branch="main", change=0.12, **kw)  # fmt: skip


def test_the_alert_states() -> None:
    assert ALERT_STATES == ("suspected", "open", "acknowledged", "fixed", "invalid", "dismissed")


def test_a_person_sets_every_state_but_suspected_and_dismissed() -> None:
    assert TRIAGE_STATES == ("open", "acknowledged", "fixed", "invalid")
    assert set(ALERT_STATES) - set(TRIAGE_STATES) == {"suspected", "dismissed"}


def test_suspected_open_and_acknowledged_alerts_are_active_closed_ones_not() -> None:
    assert ACTIVE_STATES == ("suspected", "open", "acknowledged")
    assert set(ACTIVE_STATES) < set(ALERT_STATES)
    assert not {"fixed", "invalid", "dismissed"} & set(ACTIVE_STATES)


def test_a_new_alert_is_suspected_by_kernelwatch(
    session: Session, run: Run, series: Series
) -> None:
    alert = added(session, alert_row(run, series))
    session.commit()
    session.expire_all()
    read = session.get(Alert, alert.id)
    assert (read.state, read.updated_by) == ("suspected", "kernelwatch")
    assert (read.attribution, read.bisect, read.summary, read.note) == ({}, {}, "", "")
    assert read.confirm_job_id is None and read.confirmed_change is None
    assert read.created_at.tzinfo is not None and read.updated_at.tzinfo is not None


@pytest.mark.parametrize("parent", ["run", "series", "commit"])
def test_an_alert_goes_with_its_run_series_and_commit(
    session: Session, commit: Commit, run: Run, series: Series, parent: str
) -> None:
    alert = added(session, alert_row(run, series))
    added(session, AlertEvent(alert_id=alert.id, from_state=None, to_state="suspected",
                              actor="kernelwatch"))  # fmt: skip
    session.delete({"run": run, "series": series, "commit": commit}[parent])
    session.flush()
    assert (count(session, Alert), count(session, AlertEvent)) == (0, 0)


def test_an_alert_outlives_the_other_commits_and_the_job_it_names(
    session: Session, repo: Repository, run: Run, series: Series
) -> None:
    base, bad, fix = (added(session, commit_row(repo, c * 40)) for c in "bcd")
    job = added(session, Job(repository_id=repo.id, commit_sha=base.sha, branch="main",
                             kind="confirm"))  # fmt: skip
    alert = added(session, alert_row(run, series, base_commit_id=base.id,
                                      first_bad_commit_id=bad.id, fixed_by_commit_id=fix.id,
                                      confirm_job_id=job.id))  # fmt: skip
    for row in (base, bad, fix, job):
        session.delete(row)
    session.flush()
    session.refresh(alert)
    links = (alert.base_commit_id, alert.first_bad_commit_id, alert.fixed_by_commit_id,
             alert.confirm_job_id)  # fmt: skip
    assert links == (None, None, None, None)


def test_an_event_records_the_change_with_an_empty_note_by_default(
    session: Session, run: Run, series: Series
) -> None:
    alert = added(session, alert_row(run, series))
    event = added(session, AlertEvent(alert_id=alert.id, from_state="suspected", to_state="open",
                                      actor="confirmation"))  # fmt: skip
    assert event.note == "" and event.at.tzinfo is not None


def test_a_series_has_one_change_point_per_branch_and_commit(
    session: Session, commit: Commit, series: Series
) -> None:
    def point(branch: str) -> ChangePoint:
        return ChangePoint(series_id=series.id, branch=branch, commit_id=commit.id,
                           before_median=10.0, after_median=12.0, change=0.2)  # fmt: skip

    added(session, point("main"))
    added(session, point("release"))  # the same commit on another branch's line
    with pytest.raises(IntegrityError):
        added(session, point("main"))
    session.rollback()
