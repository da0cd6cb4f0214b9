"""An HTTP protocol for uvicorn that closes connections which stop sending.

uvicorn (0.54) closes a kept-alive connection that stays idle after a response, but not one that
connects and sends nothing, nor one that stops halfway through a request: each holds a file
descriptor for good, and ~1,000 of them exhaust a 1,024-descriptor limit so that the service
stops accepting anyone. Here a connection that has not completed its request gets IDLE seconds
between two reads (from the moment it connects), then it is closed.
"""

from __future__ import annotations

import asyncio
import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

IDLE_ENV = "KERNELWATCH_IDLE_TIMEOUT_SECONDS"  # Settings.idle_timeout_seconds
IDLE_SECONDS = 30.0
PROTOCOL = "service.web.connections:IdleClosingProtocol"  # uvicorn's `http=`, for every worker


def idle_seconds() -> float:
    try:
        return float(os.environ.get(IDLE_ENV, IDLE_SECONDS))
    except ValueError:
        return IDLE_SECONDS


class IdleClosingProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a read-idle timeout while a request is incomplete."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.idle_seconds = idle_seconds()
        super().connection_made(transport)
        self._waiting_for_request = True
        self._idle: asyncio.TimerHandle | None = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._waiting_for_request:
            self._arm()  # bytes came: the next IDLE seconds start now
        super().data_received(data)

    def on_message_begin(self) -> None:
        self._waiting_for_request = True
        self._arm()
        super().on_message_begin()

    def on_message_complete(self) -> None:
        self._waiting_for_request = False
        self._disarm()
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._idle = self.loop.call_later(self.idle_seconds, self._idle_timeout)

    def _disarm(self) -> None:
        if getattr(self, "_idle", None) is not None:
            self._idle.cancel()  # type: ignore[union-attr]
            self._idle = None

    def _idle_timeout(self) -> None:
        self._idle = None
        if self._waiting_for_request and not self.transport.is_closing():
            self.transport.close()
