"""Outgoing webhooks: the events of service.store.alerts.notifications, posted to each configured
target.

A target (`KERNELWATCH_NOTIFY_WEBHOOKS`) gets Slack's incoming-webhook JSON (`{"text": ...}`,
which Slack, Mattermost, Rocket.Chat and Teams' Slack-compatible hooks read) or a generic JSON
body (`render`), for the events on its branches: an alert confirmed open, an alert fixed, a run
whose build or correctness broke. Every process of the service runs `deliver_forever`; a target
is delivered to by one of them at a time (its row is the lease), one event after the other, in
order. A failed post (no answer, a timeout, any status but 2xx) is tried again after a back-off
that doubles, and dropped after the last try (the target's row says so). Each post carries
`X-Kernelwatch-Event: <id>`, the same on every try, for a receiver that wants to drop a repeat.
The ingest never waits for any of it. The URL of a target is a secret: logs and the stored error
name the target, never its URL.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC
from typing import Any

import httpx
from anyio.to_thread import run_sync
from sqlalchemy.orm import Session, sessionmaker

from service.core.settings import Settings, WebhookTarget
from service.models import Notification
from service.models.base import utcnow
from service.store.alerts import notifications as outbox

log = logging.getLogger(__name__)
LEASE_SECONDS = 60.0
TITLES = {
    "alert_opened": "Regression confirmed",
    "alert_fixed": "Regression fixed",
    "run_broken": "Run broken",
}


def render(target: WebhookTarget, event: Notification, public_url: str | None) -> dict[str, Any]:
    """The body posted to `target` for `event`."""
    link = f"{public_url.rstrip('/')}{event.payload['path']}" if public_url else None
    if target.format == "json":
        return {
            "event": event.kind,
            "id": event.id,
            "repository": event.repository,
            "branch": event.branch,
            "created_at": event.created_at.astimezone(UTC).isoformat(),
            **{k: v for k, v in event.payload.items() if k != "path"},
            "url": link,
        }
    title = f"{TITLES.get(event.kind, event.kind)} in {event.repository} ({event.branch})"
    text = f"*{title}*: {event.payload.get('headline', '')}"
    return {"text": f"{text}\n<{link}|open in kernelwatch>" if link else text}


def watches(target: WebhookTarget, branch: str, settings: Settings) -> bool:
    branches = target.branches if target.branches is not None else settings.notify_branches
    return "*" in branches or branch in branches


def deliver_once(
    factory: sessionmaker[Session], settings: Settings, client: httpx.Client
) -> dict[str, int]:
    """One round over the targets: per target name, the events posted."""
    sent: dict[str, int] = {}
    for target in settings.notify_webhooks:
        sent[target.name] = _deliver_target(factory, settings, client, target)
    return sent


def _deliver_target(
    factory: sessionmaker[Session], settings: Settings, client: httpx.Client, target: WebhookTarget
) -> int:
    with factory() as session, session.begin():
        if not outbox.claim(session, target.name, utcnow(), LEASE_SECONDS):
            return 0  # another process has it, or its back-off is not over
        attempts, events = outbox.pending(session, target.name)
    posted, started = 0, time.monotonic()
    try:
        for event in events:
            if time.monotonic() - started > LEASE_SECONDS / 2:
                break  # the rest next round, under a fresh lease
            if not watches(target, event.branch, settings):
                with factory() as session, session.begin():
                    outbox.delivered(session, target.name, event.id, sent=False)
                continue
            error = _post(client, target, event, settings)
            with factory() as session, session.begin():
                if error is None:
                    outbox.delivered(session, target.name, event.id)
                    posted += 1
                    continue
                attempts += 1
                dropped = outbox.failed(session, target.name, event.id, attempts,
                                        settings.notify_max_attempts, error, utcnow())  # fmt: skip
            log.warning("notification %d to %s: %s%s", event.id, target.name, error,
                        " (dropped)" if dropped else "")  # fmt: skip
            return posted  # the back-off holds the rest back, in order
    finally:
        with factory() as session, session.begin():
            outbox.release(session, target.name)
    return posted


def _post(
    client: httpx.Client, target: WebhookTarget, event: Notification, settings: Settings
) -> str | None:
    """None when the target took the event; else what went wrong, without the URL."""
    try:
        answer = client.post(
            target.url.get_secret_value(),
            json=render(target, event, settings.public_url),
            headers={"X-Kernelwatch-Event": str(event.id)},
            timeout=settings.notify_timeout_seconds,
        )
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__} (no answer)"
    if 200 <= answer.status_code < 300:
        return None
    return f"HTTP {answer.status_code}"


async def deliver_forever(factory: sessionmaker[Session], settings: Settings) -> None:
    """The delivery loop of one service process (started with the app when targets are set)."""
    with httpx.Client(follow_redirects=False) as client:
        while True:
            try:
                await run_sync(deliver_once, factory, settings, client)
            except Exception:
                log.exception("notification delivery failed; retrying")
            await asyncio.sleep(settings.notify_poll_seconds)
