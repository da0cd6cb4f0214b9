"""The notification outbox and its targets' cursors (service.store.alerts.notifications), on
SQLite and PostgreSQL: an event is written once per key; a target seen for the first time starts
after the newest event; a target's row is a lease only one holder has at a time, free again once
it runs out or is released; the cursor moves one event at a time, counting what was sent; and a
failed try waits a back-off that doubles from 2 s up to 600 s, until the last try drops the event
and the cursor moves past it."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.models import Notification, NotificationTarget
from service.models.base import utcnow
from service.store.alerts import notifications as outbox

LEASE = 30.0


def record(session: Session, key: str, kind: str = "alert_opened") -> None:
    outbox.record(session, kind, key, "acme/kernels", "main", {"key": key})


def target(factory: sessionmaker[Session], name: str = "slack") -> NotificationTarget:
    with factory() as session:
        return session.scalars(
            select(NotificationTarget).where(NotificationTarget.name == name)
        ).one()


def test_an_event_is_written_once_per_key_and_its_key_clipped(
    factory: sessionmaker[Session],
) -> None:
    long_key = "alert 7 open " + "x" * 300
    with factory() as session, session.begin():
        record(session, "alert 1 open")
        record(session, "alert 1 open", kind="alert_fixed")  # the analysis done again
        record(session, long_key)
        record(session, long_key + " and more")  # the same first 200 characters
    with factory() as session:
        rows = session.execute(select(Notification.kind, Notification.key)).all()
    assert sorted(rows) == [("alert_opened", "alert 1 open"), ("alert_opened", long_key[:200])]


def test_a_new_target_starts_after_the_newest_event_and_reads_in_order(
    factory: sessionmaker[Session],
) -> None:
    now = utcnow()
    with factory() as session, session.begin():
        record(session, "before")
        assert outbox.claim(session, "slack", now, LEASE)
        record(session, "first")
        record(session, "second")
    with factory() as session:
        attempts, events = outbox.pending(session, "slack")
        assert attempts == 0
        assert [e.key for e in events] == ["first", "second"]
        assert [e.key for e in outbox.pending(session, "slack", limit=1)[1]] == ["first"]


def test_a_target_is_leased_to_one_holder_until_its_lease_ends_or_is_released(
    factory: sessionmaker[Session],
) -> None:
    now = utcnow()
    with factory() as session, session.begin():
        assert outbox.claim(session, "slack", now, LEASE)
        assert not outbox.claim(session, "slack", now + timedelta(seconds=LEASE - 1), LEASE)
        assert outbox.claim(session, "email", now, LEASE)  # each target a lease of its own
        assert outbox.claim(session, "slack", now + timedelta(seconds=LEASE + 1), LEASE)
        outbox.release(session, "slack")
        assert outbox.claim(session, "slack", now + timedelta(seconds=LEASE + 2), LEASE)


def test_the_cursor_moves_past_each_event_counting_only_those_sent(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session, session.begin():
        outbox.claim(session, "slack", utcnow(), LEASE)
        for key in ("a", "b", "c"):
            record(session, key)
    with factory() as session, session.begin():
        a, b, _ = outbox.pending(session, "slack")[1]
        outbox.delivered(session, "slack", a.id)
        outbox.delivered(session, "slack", b.id, sent=False)  # not meant for this target
    with factory() as session:
        assert [e.key for e in outbox.pending(session, "slack")[1]] == ["c"]
    assert (target(factory).last_id, target(factory).delivered) == (b.id, 1)


def test_a_failed_try_waits_a_doubling_back_off_then_the_last_one_drops_the_event(
    factory: sessionmaker[Session],
) -> None:
    now = utcnow()
    with factory() as session, session.begin():
        outbox.claim(session, "slack", now, LEASE)
        record(session, "a")
        record(session, "b")
    with factory() as session:
        a, b = outbox.pending(session, "slack")[1]
    waits = {}
    for attempt in (1, 2, 3):
        with factory() as session, session.begin():
            assert not outbox.failed(session, "slack", a.id, attempt, 4, "HTTP 500", now)
        waits[attempt] = target(factory).next_attempt_at - now
    assert waits == {1: timedelta(seconds=2), 2: timedelta(seconds=4), 3: timedelta(seconds=8)}
    stored = target(factory)
    # The cursor stays before the event; the lease is given up for whoever tries next.
    assert (stored.attempts, stored.last_id, stored.claimed_until) == (3, 0, None)
    assert stored.last_error == f"event {a.id}, try 3 of 4: HTTP 500"
    with factory() as session, session.begin():
        # Free of its lease, but its back-off is not over: nobody delivers yet.
        assert not outbox.claim(session, "slack", now + timedelta(seconds=7), LEASE)
        assert outbox.claim(session, "slack", now + timedelta(seconds=8), LEASE)
        assert outbox.pending(session, "slack")[0] == 3
        assert outbox.failed(session, "slack", a.id, 4, 4, "HTTP 500", now)
    dropped = target(factory)
    assert (dropped.last_id, dropped.attempts, dropped.dropped) == (a.id, 0, 1)
    assert dropped.next_attempt_at is None
    assert dropped.last_error.startswith(f"event {a.id} dropped after 4 tries")
    with factory() as session:
        assert [e.id for e in outbox.pending(session, "slack")[1]] == [b.id]


def test_the_back_off_stops_growing_at_ten_minutes(factory: sessionmaker[Session]) -> None:
    now = utcnow()
    with factory() as session, session.begin():
        outbox.claim(session, "slack", now, LEASE)
        outbox.failed(session, "slack", 1, 12, 99, "timeout", now)
    assert target(factory).next_attempt_at - now == timedelta(seconds=600)
