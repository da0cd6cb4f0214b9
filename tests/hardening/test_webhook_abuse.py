"""Hostile deliveries to POST /webhooks/github, beside
tests/service/api/routes/test_webhooks.py.

That file covers missing and wrong signatures, another secret, no secret configured, a plain
redelivery, deletions and tags, unknown events, a 25 MB body with its Content-Length and a
signed body that is not JSON. Here: replays (a new body under a seen delivery id, a seen body
under a new id, a forged signature on a seen id, the same delivery at once from many clients),
bodies over 25 MB that hide their size, JSON that is signed but not a push, headers that are
missing or oversized, and repositories the service has never seen or cannot name. After each,
nothing is stored or queued that should not be.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from sqlalchemy import Engine, func, select

from service.core.settings import Settings
from service.models import Job, Repository, WebhookDelivery
from tests.documents import sha_for
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import (
    SECRET,
    Hook,
    _server,
    jobs,
    push_payload,
    read_signed,
    run_apart,
)


@pytest.fixture
def live(settings: Settings) -> Iterator[LiveServer]:
    with _server(settings) as server:
        yield server


@pytest.fixture
def hook(live: LiveServer) -> Iterator[Hook]:
    with live.client() as client:
        yield Hook(client)


def rows(engine: Engine) -> tuple[int, int, int]:
    """(jobs, repositories, deliveries)."""
    with engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (Job, Repository, WebhookDelivery)
        )


def test_a_new_body_under_a_seen_delivery_id_queues_nothing(hook: Hook, engine: Engine) -> None:
    first = hook.send(push_payload(after=sha_for("a")), delivery="d-1")
    assert first.status_code == 202
    # Validly signed, other commit, same id: the id was handled, whatever the body says now.
    replay = hook.send(push_payload(after=sha_for("evil"), repo="acme/other"), delivery="d-1")
    assert replay.status_code == 200
    assert replay.json()["redelivery"] is True
    assert replay.json()["job_ids"] == first.json()["job_ids"]
    assert [j.commit_sha for j in jobs(engine)] == [sha_for("a")]
    assert rows(engine) == (1, 1, 1)


def test_a_forged_signature_on_a_seen_delivery_id_learns_nothing(
    hook: Hook, engine: Engine
) -> None:
    hook.send(push_payload(after=sha_for("a")), delivery="d-1")
    forged = hook.send(push_payload(after=sha_for("a")), delivery="d-1", signature="sha256=00")
    assert forged.status_code == 401
    assert "job_ids" not in forged.json()
    assert rows(engine) == (1, 1, 1)


def test_a_seen_body_under_a_new_delivery_id_leaves_one_job_waiting(
    hook: Hook, engine: Engine
) -> None:
    payload = push_payload(after=sha_for("a"))
    for delivery in ("d-1", "d-2", "d-3"):
        assert hook.send(payload, delivery=delivery).status_code == 202
    # GitHub signs no timestamp: a replay under a new id is a new delivery of the same push;
    # each supersedes the one before, so the commit still waits in the queue once.
    states = [(j.commit_sha, j.state) for j in jobs(engine)]
    assert states.count((sha_for("a"), "queued")) == 1
    assert rows(engine) == (3, 1, 3)


def test_the_same_delivery_at_once_from_many_clients_queues_once(
    live: LiveServer, engine: Engine
) -> None:
    payload = push_payload(after=sha_for("race"))
    answers: list[httpx.Response] = []
    barrier = threading.Barrier(8)

    def send() -> None:
        with live.client() as client:
            barrier.wait()
            answers.append(Hook(client).send(payload, delivery="d-race"))

    threads = [threading.Thread(target=send) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(answers) == 8
    assert sorted(a.status_code for a in answers) == [200] * 7 + [202]
    assert {tuple(a.json()["job_ids"]) for a in answers} == {(jobs(engine)[0].id,)}
    assert rows(engine) == (1, 1, 1)


def _chunks(size: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    yield b'{"pad": "'
    for _ in range(size // chunk):
        yield b"x" * chunk
    yield b'"}'


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
def test_a_body_over_25_mb_without_content_length_is_413(
    hook: Hook, engine: Engine, signed: bool
) -> None:
    headers = {"X-GitHub-Event": "push", "X-GitHub-Delivery": "big", "Content-Type": "x"}
    if signed:
        headers["X-Hub-Signature-256"] = "sha256=" + "0" * 64
    # A generator is sent chunked: the size shows only while the body streams in.
    answer = hook.client.post(
        "/webhooks/github", content=_chunks(26 * 1024 * 1024), headers=headers
    )
    # claiming no signature, it is refused on its headers, before its size is known
    assert answer.status_code == (413 if signed else 401)
    assert ("limit" if signed else "missing X-Hub-Signature-256") in answer.json()["detail"]
    assert rows(engine) == (0, 0, 0)


class Streamed:
    """What read_signed_body reads of a request: headers and a body stream that counts."""

    def __init__(self, size: int, chunk: int = 1 << 16) -> None:
        self.headers: dict[str, str] = {}
        self.size, self.chunk, self.read = size, chunk, 0

    async def stream(self) -> AsyncIterator[bytes]:
        while self.read < self.size:
            self.read += self.chunk
            yield b"x" * self.chunk


def test_an_unsigned_body_is_not_read_and_a_forged_one_is_not_held_in_memory() -> None:
    import tracemalloc

    from service.api.routes.webhooks import UNCHECKED_IN_MEMORY, read_signed_body
    from service.web.errors import HttpError

    limit = 25 << 20
    for header in (None, "sha1=abc", "sha256=short"):
        request = Streamed(24 << 20)
        with pytest.raises(HttpError) as refused:
            run_apart(read_signed_body(request, SECRET, header, limit))  # type: ignore[arg-type]
        assert refused.value.status == 401 and request.read == 0  # not a byte read
    forged = Streamed(24 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(HttpError) as refused:
            run_apart(read_signed_body(forged, SECRET, "sha256=" + "0" * 64, limit))  # type: ignore[arg-type]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.value.status == 401 and forged.read >= 24 << 20  # hashed to the end
    assert peak < UNCHECKED_IN_MEMORY + (2 << 20), peak  # held on disk, not in memory
    body = b'{"zen": "Keep it logically awesome."}'
    digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert read_signed(SECRET, body, f"sha256={digest}") == body


def test_a_body_just_under_the_limit_is_read_and_judged_by_its_signature(
    hook: Hook, engine: Engine
) -> None:
    body = b"".join(_chunks(25 * 1024 * 1024 - 64))
    assert hook.send(None, raw=body, signature="sha256=" + "0" * 64).status_code == 401
    assert rows(engine) == (0, 0, 0)


@pytest.mark.parametrize(
    ("raw", "status", "why"),
    [
        (b"\xff\xfe{}", 400, "not JSON"),
        (b"", 400, "not JSON"),
        (b'{"ref": "refs/heads/main", "after": ', 400, "not JSON"),
        (b"[1, 2, 3]", 422, "push payload"),
        (b'"refs/heads/main"', 422, "push payload"),
        (b"null", 422, "push payload"),
        (b'{"ref": 1, "after": 2, "repository": []}', 422, "after"),
        (b'{"ref": "refs/heads/main", "after": "' + b"g" * 40 + b'"}', 422, "after"),
        (b'{"a": NaN}', 422, "push payload"),
    ],
    ids=["not-utf8", "empty", "truncated", "array", "string", "null", "types", "sha", "nan"],
)
def test_signed_json_that_is_no_push_stores_nothing(
    hook: Hook, engine: Engine, raw: bytes, status: int, why: str
) -> None:
    answer = hook.send(None, raw=raw)
    assert answer.status_code == status, answer.text
    assert why in answer.json()["detail"]
    assert rows(engine) == (0, 0, 0)


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("ref", "refs/heads/a\u0000b", "NUL"),
        ("ref", "refs/heads/" + "b" * 256, "ref"),
        ("message", "fix\u0000", "NUL"),
        ("message", "\ud800", "surrogate"),
        ("clone_url", "--upload-pack=touch /tmp/pwned", "clone_url"),
    ],
    ids=["nul-branch", "long-branch", "nul-message", "surrogate", "clone-option"],
)
def test_signed_pushes_with_unstorable_or_dangerous_fields_are_422(
    hook: Hook, engine: Engine, field: str, value: str, why: str
) -> None:
    payload = push_payload(after=sha_for("a"))
    if field == "ref":
        payload["ref"] = value
    elif field == "message":
        payload["head_commit"]["message"] = value
    else:
        payload["repository"]["clone_url"] = value
    answer = hook.send(None, raw=json.dumps(payload).encode())
    assert answer.status_code == 422, answer.text
    assert why in answer.json()["detail"]
    assert rows(engine) == (0, 0, 0)


@pytest.mark.parametrize(
    ("headers", "status", "why"),
    [
        ({"X-GitHub-Event": None}, 400, "X-GitHub-Event"),
        ({"X-GitHub-Delivery": None}, 400, "X-GitHub-Delivery"),
        ({"X-GitHub-Event": "e" * 51}, 422, "x-github-event"),
        ({"X-GitHub-Delivery": "d" * 101}, 422, "x-github-delivery"),
    ],
    ids=["no-event", "no-delivery", "long-event", "long-delivery"],
)
def test_missing_or_oversized_headers_store_nothing(
    hook: Hook, engine: Engine, headers: dict[str, str | None], status: int, why: str
) -> None:
    body = json.dumps(push_payload(after=sha_for("a"))).encode()
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    sent: dict[str, str | None] = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": "d-headers",
        "X-Hub-Signature-256": f"sha256={signature}",
        "Content-Type": "application/json",
        **headers,
    }
    answer = hook.client.post(
        "/webhooks/github", content=body, headers={k: v for k, v in sent.items() if v}
    )
    assert answer.status_code == status, answer.text
    assert why in answer.json()["detail"]
    assert rows(engine) == (0, 0, 0)


def test_a_push_from_an_unknown_repository_registers_it_once(hook: Hook, engine: Engine) -> None:
    # Organisation webhooks deliver every repository of the organisation: a signed push from a
    # repository never seen registers it; a second push reuses it.
    for i in range(2):
        assert hook.send(push_payload(after=sha_for(f"n{i}"), repo="acme/new")).status_code == 202
    with engine.connect() as conn:
        names = conn.execute(select(Repository.name)).scalars().all()
    assert names == ["acme/new"]


@pytest.mark.parametrize(
    "name",
    ["acme/kernels; rm -rf /", "<script>x</script>/y", "", "a" * 201, "a b/c", "a//b"],
    ids=["shell", "html", "empty", "long", "space", "empty-segment"],
)
def test_repositories_that_cannot_be_named_are_422(hook: Hook, engine: Engine, name: str) -> None:
    answer = hook.send(push_payload(after=sha_for("a"), repo="acme/x") | {
        "repository": {"full_name": name, "clone_url": "https://example.com/x.git"}
    })  # fmt: skip
    assert answer.status_code == 422, answer.text
    assert "repository.full_name" in answer.json()["detail"]
    assert rows(engine) == (0, 0, 0)


def test_unknown_and_ping_events_are_remembered_without_jobs(hook: Hook, engine: Engine) -> None:
    for event in ("issues", "workflow_run", "ping", "PUSH"):
        answer = hook.send({"zen": "x", "action": "opened"}, event=event, delivery=f"d-{event}")
        assert answer.status_code in (200, 202), answer.text
        again = hook.send({"other": 1}, event=event, delivery=f"d-{event}")
        assert again.json()["redelivery"] is True
    assert rows(engine) == (0, 0, 4)
