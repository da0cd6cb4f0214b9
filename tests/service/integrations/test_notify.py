"""Outgoing webhooks against a local receiver, on SQLite and PostgreSQL: one message per confirmed
alert, per fix and per broken run on a watched branch; retries with back-off, in order; dropped
after the last try; one delivery when two service processes share the database; no URL logged."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select

from service.core.settings import Settings, WebhookTarget
from service.models import NotificationTarget
from service.store.alerts import notifications as outbox
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer
from tests.service.evaluation.alerts.test_lifecycle import (
    confirmation,
    regressed_history,
    runner_token,
)

SECRET_PATH = "/hooks/T000/B000/s3cr3t-token"


class Receiver:
    """A local HTTP server that records each POST (path, headers, JSON) and answers 500 to the
    first `failures` of them, each after `delay` seconds."""

    def __init__(self, failures: int = 0, delay: float = 0.0) -> None:
        self.posts: list[dict[str, Any]] = []
        self.failures, self.delay = failures, delay
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                time.sleep(receiver.delay)
                with receiver.lock:
                    failing = receiver.failures > 0
                    receiver.failures -= int(failing)
                    receiver.posts.append({"path": self.path, "event": self.headers.get(
                        "x-kernelwatch-event"), "body": body, "answered": 500 if failing else 200,
                        "at": time.monotonic()})  # fmt: skip
                self.send_response(500 if failing else 200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def taken(self, path: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [p for p in self.posts if p["answered"] == 200 and path in (p["path"], None)]

    def wait_for(self, count: int, path: str, timeout: float = 30) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = [p for p in self.taken() if p["path"] == path]
            if len(got) >= count:
                time.sleep(0.5)  # and nothing more comes
                return [p for p in self.taken() if p["path"] == path]
            time.sleep(0.1)
        raise AssertionError(f"{path}: {len(self.taken())} of {count} posts after {timeout} s")

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def notifying(settings: Settings, receiver: Receiver, **changes: Any) -> Settings:
    targets = [
        WebhookTarget(name="chat", url=f"{receiver.url}{SECRET_PATH}", format="slack"),
        WebhookTarget(name="bus", url=f"{receiver.url}/json", format="json"),
    ]
    update = {"notify_webhooks": targets, "notify_poll_seconds": 0.2,
              "public_url": "https://kw.example.com", **changes}  # fmt: skip
    return settings.model_copy(update=update)


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outbox, "BACKOFF_SECONDS", 0.3)


def post_broken_build(admin: httpx.Client, label: str, branch: str = "main") -> None:
    doc = document(commit=label, branch=branch, medians={"a": 1.0})
    doc.update(status="build_failed", workloads=[])
    doc["build"].update(status="failed", log_tail="gemm.cu(12): error: expected a ';'")
    assert admin.post("/api/v1/runs", json=doc).status_code == 201


def serve(stack: ExitStack, settings: Settings) -> LiveServer:
    from service.api.app import create_app

    return stack.enter_context(LiveServer(create_app(settings, migrate=False)))


def test_a_confirmed_alert_and_its_fix_each_send_one_message(
    settings: Settings, engine: Engine, receiver: Receiver
) -> None:
    with ExitStack() as stack:
        server = serve(stack, notifying(settings, receiver))
        with server.client(ADMIN_TOKEN) as admin:
            labels = regressed_history(admin)
            (alert,) = admin.get("/api/v1/alerts").json()
            time.sleep(1.0)
            assert receiver.taken() == []  # suspected: nobody is told yet
            with server.client(runner_token(engine)) as runner:
                claim = runner.post("/api/v1/jobs/claim").json()
                answer = runner.post("/api/v1/runs", json=confirmation(claim, 100.0, 106.0))
                assert answer.status_code == 201, answer.text
            (chat,) = receiver.wait_for(1, SECRET_PATH)
            (bus,) = receiver.wait_for(1, "/json")
            fix = document(commit="fix", parents=["head"], ancestors=["head", *labels[::-1]],
                           minutes=30, medians={"gemm_bias_act_fwd": 100.2, "steady": 50.0},
                           seed=90)  # fmt: skip
            assert admin.post("/api/v1/runs", json=fix).status_code == 201
            chat_fixed = receiver.wait_for(2, SECRET_PATH)[1]
            bus_fixed = receiver.wait_for(2, "/json")[1]
    text = chat["body"]["text"]
    assert text.startswith("*Regression confirmed in acme/kernels (main)*: gemm_fwd 1024³")
    assert f"<https://kw.example.com/alerts/{alert['id']}|open in kernelwatch>" in text
    assert bus["body"]["event"] == "alert_opened" and bus["body"]["alert_id"] == alert["id"]
    assert bus["body"]["commit"] == sha_for("head") and bus["body"]["state"] == "open"
    assert bus["body"]["confirmed_change"] == pytest.approx(0.06, abs=0.01)
    assert bus["body"]["url"] == f"https://kw.example.com/alerts/{alert['id']}"
    assert chat_fixed["body"]["text"].startswith("*Regression fixed in acme/kernels (main)*")
    assert bus_fixed["body"]["event"] == "alert_fixed" and bus_fixed["body"]["state"] == "fixed"
    assert sha_for("fix")[:12] in bus_fixed["body"]["note"]
    assert bus["event"] != bus_fixed["event"]


def test_broken_runs_are_sent_for_the_watched_branches_only(
    settings: Settings, receiver: Receiver
) -> None:
    with ExitStack() as stack:
        server = serve(stack, notifying(settings, receiver))
        with server.client(ADMIN_TOKEN) as admin:
            post_broken_build(admin, "f", branch="feature")
            post_broken_build(admin, "b")
            wrong = document(commit="c", parents=["b"], medians={"a": 100.0, "b": 100.0})
            broken = wrong["workloads"][1]
            broken.update(status="correctness_failed", timing=None, error="rel L2 error 0.3")
            broken["correctness"].update(passed=False, error_norm=0.3)
            assert admin.post("/api/v1/runs", json=wrong).status_code == 201
            # The same run again stores nothing and tells nobody twice.
            assert admin.post("/api/v1/runs", json=wrong).status_code == 200
            posts = receiver.wait_for(2, "/json")
    assert [p["body"]["event"] for p in posts] == ["run_broken", "run_broken"]
    assert [p["body"]["commit"] for p in posts] == [sha_for("b"), sha_for("c")]
    assert posts[0]["body"]["build_status"] == "failed"
    (failing,) = posts[1]["body"]["correctness_failed"]
    assert failing.startswith("gemm_fwd ")
    assert "failed their correctness check" in receiver.taken(SECRET_PATH)[1]["body"]["text"]


def test_a_failing_receiver_is_retried_in_order_and_no_url_is_logged(
    settings: Settings, engine: Engine, fast_backoff: None, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = Receiver(failures=3)
    try:
        with ExitStack() as stack, caplog.at_level(logging.WARNING):
            server = serve(stack, notifying(settings, receiver))
            with server.client(ADMIN_TOKEN) as admin:
                for label in ("b1", "b2"):
                    post_broken_build(admin, label)
                chat = receiver.wait_for(2, SECRET_PATH)
                receiver.wait_for(2, "/json")
    finally:
        receiver.close()
    tries = [p for p in receiver.posts if p["answered"] == 500]
    assert len(tries) == 3
    shas = [p["body"]["text"].split(":")[1].strip() for p in chat]
    assert shas == [sha_for("b1")[:12], sha_for("b2")[:12]]
    # In order per target: the tries of an event, then the next event, never the other way.
    by_target: dict[str, list[dict]] = {}
    for p in receiver.posts:
        by_target.setdefault(p["path"], []).append(p)
    for posts in by_target.values():
        assert [p["event"] for p in posts] == sorted(p["event"] for p in posts)
    with engine.connect() as conn:
        rows = conn.execute(select(NotificationTarget.name, NotificationTarget.delivered,
                                   NotificationTarget.last_error)).all()  # fmt: skip
    assert {name: n for name, n, _ in rows} == {"chat": 2, "bus": 2}
    assert all("HTTP 500" in e for _, _, e in rows if e)
    assert "s3cr3t" not in caplog.text and "s3cr3t" not in " ".join(e for _, _, e in rows)
    warned = [r.getMessage() for r in caplog.records if r.name == "service.integrations.notify"]
    assert len(warned) == 3 and all(": HTTP 500" in w for w in warned)


def test_an_event_is_dropped_after_the_last_try_and_the_next_goes_on(
    settings: Settings, engine: Engine, fast_backoff: None
) -> None:
    receiver = Receiver(failures=2)
    one = notifying(settings, receiver, notify_max_attempts=2)
    one = one.model_copy(update={"notify_webhooks": one.notify_webhooks[1:]})  # "bus" only
    try:
        with ExitStack() as stack:
            server = serve(stack, one)
            with server.client(ADMIN_TOKEN) as admin:
                for label in ("b1", "b2"):
                    post_broken_build(admin, label)
                (taken,) = receiver.wait_for(1, "/json")
    finally:
        receiver.close()
    assert taken["body"]["commit"] == sha_for("b2")
    with engine.connect() as conn:
        dropped, error = conn.execute(
            select(NotificationTarget.dropped, NotificationTarget.last_error)
        ).one()
    assert dropped == 1 and "dropped after 2 tries: HTTP 500" in error


def test_two_service_processes_deliver_each_event_once(settings: Settings) -> None:
    """Both processes' delivery loops run at once (each post takes 0.3 s, a round more than
    the 0.2 s between rounds): the target's lease lets one of them deliver."""
    receiver = Receiver(delay=0.3)
    with ExitStack() as stack:
        stack.callback(receiver.close)
        servers = [serve(stack, notifying(settings, receiver)) for _ in range(2)]
        for i in range(6):
            with servers[i % 2].client(ADMIN_TOKEN) as admin:
                post_broken_build(admin, f"b{i}")
        posts = receiver.wait_for(6, "/json")
        time.sleep(1.0)
        posts = receiver.taken("/json")
    assert len(posts) == 6
    assert len({p["event"] for p in posts}) == 6
    assert [p["body"]["commit"] for p in posts] == [sha_for(f"b{i}") for i in range(6)]


def test_a_webhook_url_must_be_http_and_is_never_shown() -> None:
    target = WebhookTarget(name="chat", url="https://hooks.example.com/T/B/s3cr3t")
    assert "s3cr3t" not in repr(target) and "s3cr3t" not in str(Settings(notify_webhooks=[target]))
    with pytest.raises(ValueError, match="URL"):
        WebhookTarget(name="chat", url="file:///etc/passwd")
    with pytest.raises(ValueError, match="name"):
        WebhookTarget(name="no spaces", url="https://hooks.example.com/x")
