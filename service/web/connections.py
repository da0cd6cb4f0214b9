"""An HTTP protocol for uvicorn that closes connections which stop sending, or send too slowly.

uvicorn (0.54) closes a kept-alive connection that stays idle after a response, but not one that
connects and sends nothing, nor one that stops halfway through a request: each holds a file
descriptor for good, and ~1,000 of them exhaust a 1,024-descriptor limit so that the service
stops accepting anyone. Here a connection that has not completed its request gets IDLE seconds
between two reads (from the moment it connects), then it is closed. Reads alone do not keep a
request alive either (a client sending one header line every 10 s restarted the idle timer on
each): its head must be in within HEADER seconds of its first byte, as nginx's
`client_header_timeout`, and its body within as long again plus its length at
BODY_MIN_RATE bytes a second (the longest body allowed where no length is given); past either
deadline the client gets 408 and the connection is closed.
"""

from __future__ import annotations

import asyncio
import json
import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

IDLE_ENV = "KERNELWATCH_IDLE_TIMEOUT_SECONDS"  # Settings.idle_timeout_seconds
HEADER_ENV = "KERNELWATCH_HEADER_TIMEOUT_SECONDS"  # Settings.header_timeout_seconds
BODY_RATE_ENV = "KERNELWATCH_BODY_MIN_BYTES_PER_SECOND"  # Settings.body_min_bytes_per_second
BODY_DEADLINE_ENV = "KERNELWATCH_BODY_DEADLINE_SECONDS"  # Settings.body_deadline_seconds
MAX_BODY_ENV = "KERNELWATCH_MAX_BODY_BYTES"  # Settings.max_body_bytes
IDLE_SECONDS = 30.0
HEADER_SECONDS = 10.0
BODY_MIN_RATE = 64 * 1024.0
BODY_DEADLINE_SECONDS = 60.0  # whatever a body's declared length: 32 MiB at 10 B/s held 522 s
MAX_BODY_BYTES = 32 * 1024 * 1024
PROTOCOL = "service.web.connections:IdleClosingProtocol"  # uvicorn's `http=`, for every worker
MAX_URL_BYTES = 8 * 1024  # nginx's default large_client_header_buffers line
MAX_HEAD_BYTES = 64 * 1024  # all of a request's headers together
REFUSED = (
    b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)
TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)


def _number(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def idle_seconds() -> float:
    return _number(IDLE_ENV, IDLE_SECONDS)


def body_seconds(length: int | None) -> float:
    """How long a body of `length` bytes may take to arrive (None: of the longest allowed), and
    never longer than the body deadline."""
    size = length if length is not None else _number(MAX_BODY_ENV, MAX_BODY_BYTES)
    rate = max(_number(BODY_RATE_ENV, BODY_MIN_RATE), 1.0)
    wanted = _number(HEADER_ENV, HEADER_SECONDS) + size / rate
    return min(wanted, _number(BODY_DEADLINE_ENV, BODY_DEADLINE_SECONDS))


class IdleClosingProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a read-idle timeout while a request is incomplete, and
    deadlines for a request's head and body."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.idle_seconds = idle_seconds()
        super().connection_made(transport)
        self._waiting_for_request = True
        self._idle: asyncio.TimerHandle | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._waiting_for_request:
            self._arm()  # bytes came: the next IDLE seconds start now
        super().data_received(data)

    def on_message_begin(self) -> None:
        self._head_bytes = 0
        self._refusal: tuple[int, bytes, str] | None = None
        self._waiting_for_request = True
        self._arm()
        self._set_deadline(_number(HEADER_ENV, HEADER_SECONDS), "the request's headers")
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_URL_BYTES:  # raised through the parser: send_400_response
            self._refusal = (414, b"URI Too Long", f"the URL is over {MAX_URL_BYTES} bytes")
            raise ValueError(self._refusal[2])

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value)
        if self._head_bytes > MAX_HEAD_BYTES:  # a single 16 MB header was taken whole
            self._refusal = (431, b"Request Header Fields Too Large",
                             f"the request's headers are over {MAX_HEAD_BYTES} bytes")  # fmt: skip
            raise ValueError(self._refusal[2])
        super().on_header(name, value)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to what its parser refused, as JSON like every other error (it was
        text/plain), with the status the refusal has."""
        status, reason, detail = getattr(self, "_refusal", None) or (400, b"Bad Request", msg)
        body = json.dumps({"detail": detail}).encode()
        self.transport.write(REFUSED % (status, reason, len(body), body))
        self.transport.close()

    def on_headers_complete(self) -> None:
        length = next((v for k, v in self.headers if k == b"content-length"), None)
        chunked = any(k == b"transfer-encoding" for k, _ in self.headers)
        if length is None and not chunked:
            self._clear_deadline()  # no body to wait for
        else:
            size = int(length) if length is not None and length.strip().isdigit() else None
            self._set_deadline(body_seconds(size), "the request's body")
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._waiting_for_request = False
        self._disarm()
        self._clear_deadline()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        if self._waiting_for_request and not self.transport.is_closing():
            # Answered (a 401, a 413) before its body was in: the rest of the body would only
            # hold the connection. Closed at once, the answer written first.
            self._disarm()
            self._clear_deadline()
            self.transport.close()
            return
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._clear_deadline()
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

    def _set_deadline(self, seconds: float, what: str) -> None:
        self._clear_deadline()
        self._deadline = self.loop.call_later(seconds, self._too_slow, what, seconds)

    def _clear_deadline(self) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()  # type: ignore[union-attr]
            self._deadline = None

    def _too_slow(self, what: str, seconds: float) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is None or not self.cycle.response_started:
            detail = b'{"detail":"%s did not arrive within %.0f s"}' % (what.encode(), seconds)
            self.transport.write(TIMED_OUT % (len(detail), detail))
        self.transport.close()
