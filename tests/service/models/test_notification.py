"""service/models/notification.py on the migrated database: an event is recorded once (its key is
unique, so a transaction that would write it twice is refused), later events get higher ids (the
order targets read them in), and a target is one row per configured name that starts before the
first event with nothing tried, delivered or dropped."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.models import Notification, NotificationTarget
from tests.service.models.conftest import added


def event(key: str) -> Notification:
    return Notification(kind="alert_opened", key=key, repository="acme/kernels", branch="main")


def test_an_event_is_recorded_once(session: Session) -> None:
    added(session, event("alert 12 open"))
    with pytest.raises(IntegrityError):
        added(session, event("alert 12 open"))
    session.rollback()


def test_later_events_have_higher_ids_and_an_empty_payload_by_default(session: Session) -> None:
    first, second = added(session, event("alert 12 open")), added(session, event("alert 12 fixed"))
    assert first.id < second.id
    assert first.payload == {} and first.created_at.tzinfo is not None


def test_a_target_is_one_row_per_name(session: Session) -> None:
    added(session, NotificationTarget(name="slack"))
    with pytest.raises(IntegrityError):
        added(session, NotificationTarget(name="slack"))
    session.rollback()


def test_a_new_target_starts_before_the_first_event_with_nothing_done(session: Session) -> None:
    target = added(session, NotificationTarget(name="slack"))
    assert target.last_id == 0  # every event's id is above it
    assert (target.attempts, target.delivered, target.dropped, target.last_error) == (0, 0, 0, "")
    assert target.next_attempt_at is None and target.claimed_until is None  # due, unleased
