"""Connections that send nothing, or stop halfway through a request, are closed once idle
(service.web.connections): 1,100 of them leave a service with a 1,024-descriptor limit
answering /healthz."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.e2e import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]


def _limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def test_1100_idle_and_half_sent_connections_leave_healthz_answering(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:  # this test's own 1,100 client sockets
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    port = free_port()
    env = {**os.environ, "KERNELWATCH_DATA_DIR": str(tmp_path),
           "KERNELWATCH_IDLE_TIMEOUT_SECONDS": "2", "KERNELWATCH_LOG_LEVEL": "WARNING"}  # fmt: skip
    service = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port)],
        cwd=ROOT, env=env, preexec_fn=_limit_descriptors,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    clients: list[socket.socket] = []
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: httpx.get(f"{url}/healthz", timeout=2).status_code == 200, service)
        for i in range(1100):
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            if i % 2:  # half a request head, then nothing
                client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            clients.append(client)
        started = time.monotonic()
        wait_for(lambda: httpx.get(f"{url}/healthz", timeout=2).status_code == 200, service, 30)
        assert time.monotonic() - started < 30
        # the service closed them: each client reads the end of its stream
        closed = 0
        for client in clients[:50]:
            client.settimeout(10)
            try:
                closed += client.recv(1) == b""
            except ConnectionResetError:  # closed with our half request unread: a reset
                closed += 1
            except TimeoutError:  # still open
                pass
        assert closed == 50
    finally:
        for client in clients:
            client.close()
        service.terminate()
        service.wait(30)


def _serve(tmp_path: Path, **env: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    environ = {**os.environ, "KERNELWATCH_DATA_DIR": str(tmp_path),
               "KERNELWATCH_LOG_LEVEL": "WARNING", **env}  # fmt: skip
    service = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port)],
        cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for(lambda: httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200,
             service)  # fmt: skip
    return service, port


def _trickle(port: int, head: bytes, parts: list[bytes], every: float) -> tuple[bytes, float]:
    """Send `head`, then each of `parts` `every` seconds (a read each time keeps the idle timer
    from firing): what came back, and after how many seconds the service closed."""
    client = socket.create_connection(("127.0.0.1", port), timeout=30)
    started = time.monotonic()
    client.sendall(head)
    try:
        for part in parts:
            time.sleep(every)
            client.sendall(part)
    except (BrokenPipeError, ConnectionResetError):
        pass  # closed already
    client.settimeout(30)
    answer = b""
    try:
        while chunk := client.recv(65536):
            answer += chunk
    except ConnectionResetError:
        pass
    client.close()
    return answer, time.monotonic() - started


def test_headers_and_bodies_that_trickle_in_get_408_by_their_deadlines(tmp_path: Path) -> None:
    service, port = _serve(
        tmp_path, KERNELWATCH_IDLE_TIMEOUT_SECONDS="5", KERNELWATCH_HEADER_TIMEOUT_SECONDS="2",
        KERNELWATCH_BODY_MIN_BYTES_PER_SECOND="1000", KERNELWATCH_ADMIN_TOKEN="slow",
    )  # fmt: skip
    try:
        # A header line every 0.5 s: each read would restart the idle timer, not the deadline.
        lines = [f"X-Slow-{i}: x\r\n".encode() for i in range(40)]
        answer, took = _trickle(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", lines, 0.5)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"headers did not arrive within 2 s" in answer
        assert 1.5 < took < 6, took
        # A body of 2,000 bytes may take 2 s + 2,000 / 1,000 B/s = 4 s; at 20 B every 0.5 s, no.
        head = (b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                b"authorization: Bearer slow\r\ncontent-length: 2000\r\n\r\n")  # fmt: skip
        answer, took = _trickle(port, head, [b" " * 20] * 40, 0.5)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"body did not arrive within 4 s" in answer
        assert 3.5 < took < 8, took
        # The same body in time is read and answered as usual (blanks: no JSON document).
        answer, took = _trickle(port, head, [b" " * 1000] * 2, 0.5)
        assert answer.startswith(b"HTTP/1.1 4") and b" 408 " not in answer[:20], answer[:200]
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    finally:
        service.terminate()
        service.wait(30)
