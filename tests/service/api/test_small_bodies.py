"""No body stalls the service (issue 49, item 2): a route whose body is a few fields takes
kilobytes (413 before a byte is read, the connection closed), a body's deadline is bounded
whatever its declared length, and a request answered before its body is in has its connection
closed at once, against the real server and its protocol."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.api.small_bodies import SMALL_BODY_BYTES
from service.web import connections
from tests.conftest import ADMIN_TOKEN
from tests.e2e import free_port, wait_for
from tests.live_server import LiveServer

ROOT = Path(__file__).resolve().parents[3]


def test_a_registration_larger_than_its_route_takes_is_413_unread(server: LiveServer) -> None:
    big = b'{"host": "' + b"x" * (SMALL_BODY_BYTES + 10) + b'"}'
    with server.client(ADMIN_TOKEN) as admin:
        answer = admin.post("/api/v1/runners/register", content=big,
                            headers={"Content-Type": "application/json"})  # fmt: skip
        assert answer.status_code == 413, answer.text
        assert answer.headers["connection"] == "close"
        assert "over this route's 65536-byte limit" in answer.json()["detail"]

        def chunks() -> Iterator[bytes]:  # no length: counted as it comes
            yield b'{"host": "'
            for _ in range(20):
                yield b"x" * 8192
            yield b'"}'

        answer = admin.patch("/api/v1/alerts/1", content=chunks(),
                             headers={"Content-Type": "application/json"})  # fmt: skip
        assert answer.status_code == 413, answer.text
        assert admin.get("/healthz").status_code == 200


def test_a_body_deadline_is_bounded_whatever_its_declared_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(connections.BODY_DEADLINE_ENV, raising=False)
    assert connections.body_seconds(1024) < 11  # a small body: the header timeout and a bit
    assert connections.body_seconds(32 << 20) == 60.0  # 522 s at the minimum rate before
    monkeypatch.setenv(connections.BODY_DEADLINE_ENV, "5")
    assert connections.body_seconds(None) == 5.0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[int]:
    """`kernelwatch serve` as deployed (its protocol), on a port of its own."""
    port = free_port()
    env = {**os.environ, "KERNELWATCH_DATA_DIR": str(tmp_path), "KERNELWATCH_LOG_LEVEL": "WARNING",
           "KERNELWATCH_ADMIN_TOKEN": "admin-secret"}  # fmt: skip
    service = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: httpx.get(f"{url}/healthz", timeout=2).status_code == 200, service)
        yield port
    finally:
        service.terminate()
        service.wait(timeout=10)


def test_a_request_refused_before_its_body_is_in_has_its_connection_closed(served: int) -> None:
    """A 32 MiB body sent slowly with no valid token: the 401 comes, and the connection is
    closed at once instead of being held while the body trickles in."""
    client = socket.create_connection(("127.0.0.1", served), timeout=10)
    try:
        client.sendall(
            b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n"
            b"Content-Type: application/json\r\nContent-Length: 33554432\r\n\r\n{"
        )
        started = time.monotonic()
        answer = b""
        while True:
            try:
                chunk = client.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
        assert time.monotonic() - started < 5
    finally:
        client.close()
