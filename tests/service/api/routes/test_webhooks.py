"""POST /webhooks/github over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select

from service.api.app import create_app
from service.api.routes.webhooks import read_signed_body
from service.core.settings import Settings
from service.models import Job, Repository, WebhookDelivery
from service.web.errors import HttpError
from tests.documents import sha_for
from tests.live_server import LiveServer, Senders

SECRET = "webhook-secret"


def run_apart(coroutine: Any) -> Any:
    """The coroutine on a loop of its own thread (this one may already run a loop)."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # handed back to the caller
            out["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


class BodyRequest:
    """What read_signed_body reads of a request: headers, and the body as one chunk."""

    def __init__(self, body: bytes) -> None:
        self.headers: dict[str, str] = {}
        self.body = body

    async def stream(self) -> AsyncIterator[bytes]:
        yield self.body


def read_signed(secret: str, body: bytes, header: str | None) -> bytes:
    return run_apart(read_signed_body(BodyRequest(body), secret, header, 1 << 20))  # type: ignore[arg-type]


def test_githubs_published_signature_vector() -> None:
    # From GitHub's "Validating webhook deliveries" documentation.
    secret, body = "It's a Secret to Everybody", b"Hello, World!"
    good = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert read_signed(secret, body, good) == body
    with pytest.raises(HttpError):
        read_signed(secret, body, good[:-1] + "8")
    with pytest.raises(HttpError):
        read_signed(secret, body + b" ", good)


def push_payload(
    *,
    after: str,
    branch: str = "main",
    repo: str = "acme/kernels",
    commits: list[str] | None = None,
    deleted: bool = False,
) -> dict:
    labels = commits or [after]
    entries = [
        {
            "id": sha,
            "tree_id": sha_for("tree" + sha),
            "distinct": True,
            "message": f"change {i}\n\nmore words",
            "timestamp": "2026-11-18T14:03:27+01:00",
            "url": f"https://github.com/{repo}/commit/{sha}",
            "author": {"name": "Ada", "email": "ada@example.com", "username": "ada"},
            "committer": {"name": "Ada", "email": "ada@example.com", "username": "ada"},
            "added": [],
            "removed": [],
            "modified": ["kernels/cuda/gemm.cu"],
        }
        for i, sha in enumerate(labels)
    ]
    return {
        "ref": f"refs/heads/{branch}",
        "before": sha_for("before"),
        "after": after,
        "created": False,
        "deleted": deleted,
        "forced": False,
        "base_ref": None,
        "compare": f"https://github.com/{repo}/compare/abc...def",
        "commits": [] if deleted else entries,
        "head_commit": None if deleted else entries[-1],
        "repository": {
            "id": 1296269,
            "name": repo.split("/")[1],
            "full_name": repo,
            "private": False,
            "owner": {"login": repo.split("/")[0]},
            "clone_url": f"https://github.com/{repo}.git",
            "default_branch": "main",
        },
        "pusher": {"name": "ada", "email": "ada@example.com"},
        "sender": {"login": "ada", "id": 1},
    }


class Hook:
    def __init__(self, client: httpx.Client | Senders, secret: str = SECRET) -> None:
        self.client, self.secret = client, secret

    def send(
        self,
        payload: object,
        *,
        event: str = "push",
        delivery: str | None = None,
        signature: str | None = "auto",
        raw: bytes | None = None,
    ) -> httpx.Response:
        body = raw if raw is not None else json.dumps(payload).encode()
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "Content-Type": "application/json",
        }
        if signature == "auto":
            digest = hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()
            headers["X-Hub-Signature-256"] = f"sha256={digest}"
        elif signature is not None:
            headers["X-Hub-Signature-256"] = signature
        return self.client.post("/webhooks/github", content=body, headers=headers)


def _server(settings: Settings, **overrides: object) -> LiveServer:
    for key, value in {"webhook_secret": SECRET, **overrides}.items():
        setattr(settings, key, value)
    return LiveServer(create_app(settings, migrate=False))


@pytest.fixture
def hook(settings: Settings) -> Iterator[Hook]:
    with _server(settings) as live, live.client() as client:
        yield Hook(client)


def jobs(engine: Engine) -> list[Job]:
    with engine.connect() as conn:
        return list(conn.execute(select(Job).order_by(Job.id)).all())


def test_ping_answers_200(hook: Hook, engine: Engine) -> None:
    answer = hook.send({"zen": "Keep it logically awesome.", "hook_id": 1}, event="ping")
    assert answer.status_code == 200
    assert "pong" in answer.json()["detail"]
    assert jobs(engine) == []


def test_push_queues_the_head_commit_and_registers_the_repository(
    hook: Hook, engine: Engine
) -> None:
    head = sha_for("head")
    answer = hook.send(push_payload(after=head, commits=[sha_for("first"), head]))
    assert answer.status_code == 202, answer.text
    queued = jobs(engine)
    assert answer.json()["job_ids"] == [j.id for j in queued]
    assert [(j.commit_sha, j.branch, j.state) for j in queued] == [(head, "main", "queued")]
    with engine.connect() as conn:
        repo = conn.execute(select(Repository)).one()
    assert (repo.name, repo.clone_url) == ("acme/kernels", "https://github.com/acme/kernels.git")


@pytest.mark.parametrize(
    ("signature", "why"),
    [
        (None, "missing"),
        ("sha256=" + "0" * 64, "does not match"),
        ("sha1=abc", "not sha256= and 64 hex digits"),
        ("sha256=" + "0" * 63 + "Z", "not sha256= and 64 hex digits"),
    ],
)
def test_bad_signatures_are_401_and_store_nothing(
    hook: Hook, engine: Engine, signature: str | None, why: str
) -> None:
    answer = hook.send(push_payload(after=sha_for("x")), signature=signature)
    assert answer.status_code == 401
    assert why in answer.json()["detail"]
    assert jobs(engine) == []
    with engine.connect() as conn:
        assert conn.execute(select(WebhookDelivery)).all() == []


def test_signed_with_another_secret_is_401(hook: Hook, engine: Engine) -> None:
    answer = Hook(hook.client, secret="other").send(push_payload(after=sha_for("x")))
    assert answer.status_code == 401
    assert jobs(engine) == []


def test_no_secret_configured_is_503(settings: Settings, engine: Engine) -> None:
    with _server(settings, webhook_secret=None) as live, live.client() as client:
        answer = Hook(client).send(push_payload(after=sha_for("x")))
    assert answer.status_code == 503
    assert "KERNELWATCH_WEBHOOK_SECRET" in answer.json()["detail"]
    assert jobs(engine) == []


def test_redelivery_queues_nothing_and_answers_the_original_jobs(
    hook: Hook, engine: Engine
) -> None:
    payload = push_payload(after=sha_for("a"))
    first = hook.send(payload, delivery="d-1")
    again = hook.send(payload, delivery="d-1")
    assert first.status_code == 202
    assert again.json()["job_ids"] == first.json()["job_ids"]
    assert again.json()["redelivery"] is True
    assert len(jobs(engine)) == 1


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (push_payload(after="0" * 40, commits=[sha_for("gone")]), "deleted"),
        (push_payload(after=sha_for("x"), deleted=True), "deleted"),
        ({**push_payload(after=sha_for("t")), "ref": "refs/tags/v1.0"}, "not a branch"),
    ],
    ids=["after-zeros", "deleted-flag", "tag"],
)
def test_deletions_and_tags_queue_nothing(
    hook: Hook, engine: Engine, payload: dict, why: str
) -> None:
    answer = hook.send(payload)
    assert answer.status_code == 200
    assert why in answer.json()["detail"]
    assert jobs(engine) == []


def test_unknown_events_are_accepted_and_ignored(hook: Hook, engine: Engine) -> None:
    answer = hook.send({"action": "opened"}, event="issues")
    assert answer.status_code == 202
    assert "ignored" in answer.json()["detail"]
    assert jobs(engine) == []


def test_bodies_over_25_mb_are_413(hook: Hook, engine: Engine) -> None:
    body = b'{"pad": "' + b"x" * (25 * 1024 * 1024) + b'"}'
    answer = hook.send(None, raw=body)
    assert answer.status_code == 413
    assert jobs(engine) == []


def test_malformed_but_signed_payloads_store_nothing(hook: Hook, engine: Engine) -> None:
    not_json = hook.send(None, raw=b"{nope")
    assert not_json.status_code == 400
    missing = hook.send({"ref": "refs/heads/main"})
    assert missing.status_code == 422
    assert "after" in missing.json()["detail"]
    assert jobs(engine) == []


def test_a_newer_push_cancels_the_branchs_queued_jobs(hook: Hook, engine: Engine) -> None:
    hook.send(push_payload(after=sha_for("old")))
    hook.send(push_payload(after=sha_for("other"), branch="feature"))
    hook.send(push_payload(after=sha_for("new")))
    states = {j.commit_sha: j.state for j in jobs(engine)}
    assert states == {
        sha_for("old"): "cancelled",
        sha_for("other"): "queued",
        sha_for("new"): "queued",
    }


def test_every_commit_setting_and_label_sets(settings: Settings, engine: Engine) -> None:
    commits = [sha_for("c1"), sha_for("c2"), sha_for("c3")]
    with _server(settings, queue_every_commit=True) as live, live.client() as client:
        hook = Hook(client)
        hook.send(push_payload(after=commits[-1], commits=commits))
        with engine.begin() as conn:
            conn.execute(
                Repository.__table__.update().values(
                    runner_label_sets=[{"gpu": "h100"}, {"gpu": "a100"}]
                )
            )
        second = hook.send(push_payload(after=sha_for("c4"), commits=[sha_for("c4")]))
    queued = [j for j in jobs(engine) if j.state == "queued"]
    assert len(second.json()["job_ids"]) == 2
    assert sorted(j.required_labels["gpu"] for j in queued) == ["a100", "h100"]
    assert [j.commit_sha for j in jobs(engine)][:3] == commits


@pytest.mark.parametrize("algorithm", ["sha1", "sha512", ""])
def test_the_right_digest_under_another_algorithms_name_is_401(
    hook: Hook, engine: Engine, algorithm: str
) -> None:
    """The header must say sha256: a digest labelled as another algorithm is not GitHub's."""
    body = json.dumps(push_payload(after=sha_for("x"))).encode()
    digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    answer = hook.send(None, raw=body, signature=f"{algorithm}={digest}")
    assert answer.status_code == 401, answer.text
    assert "not sha256= and 64 hex digits" in answer.json()["detail"]
    assert jobs(engine) == []
    # The same digest under its own name is taken: only the label was wrong.
    assert hook.send(None, raw=body, signature=f"sha256={digest}").status_code == 202
