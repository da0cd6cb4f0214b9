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
