"""Serve an ASGI app with uvicorn on a free local port inside the test process."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import httpx
import uvicorn


class LiveServer:
    def __init__(self, app: Any) -> None:
        self.app = app
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # uvicorn closes a kept-alive connection after 5 s idle; a test that pauses longer (waiting
        # for the analysis on a loaded 2-core machine) can reuse a pooled connection just as the
        # server closes it, and the request dies with ECONNRESET. Runners retry that; tests don't.
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_keep_alive=600)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def __enter__(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()

    def client(self, token: str | None = None) -> httpx.Client:
        return client_for(self.url, token)

    def senders(self, token: str | None = None) -> Senders:
        """Clients for a burst from threads, one to a thread (`Senders`)."""
        return Senders(self.url, token)


def client_for(url: str, token: str | None, timeout: float = 30) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=timeout)


class Senders:
    """A client for each thread that sends through it, as a burst of runners and webhooks are many
    senders: one client's connection pool shared by eight threads failed a request with EBADF
    (a socket another thread had closed) in CI on PostgreSQL (2026-12-07)."""

    def __init__(self, url: str, token: str | None, timeout: float = 30) -> None:
        self.url, self.token, self.timeout = url, token, timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._made: list[httpx.Client] = []

    def client(self) -> httpx.Client:
        made = getattr(self._local, "client", None)
        if made is None:
            made = self._local.client = client_for(self.url, self.token, self.timeout)
            with self._lock:
                self._made.append(made)
        return made

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.client().post(path, **kwargs)

    def close(self) -> None:
        with self._lock:
            made, self._made = self._made, []
        for client in made:
            client.close()

    def __enter__(self) -> Senders:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
