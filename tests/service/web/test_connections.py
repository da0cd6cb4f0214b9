"""What uvicorn's parser refuses is answered as JSON like every other error, with its own status
(issue 49, item 6): a URL over 8 KiB (414), headers over 64 KiB (431, a single 16 MB header was
taken whole), a malformed length (400, text/plain before); and a large answer is gzipped for a
client that asks."""

from __future__ import annotations

import gzip
import json
import socket

import httpx

from tests.service.api.test_small_bodies import served  # noqa: F401


def exchange(port: int, request: bytes) -> tuple[bytes, bytes]:
    """The raw answer's status line and body to one request sent raw."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(request)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


def test_what_the_parser_refuses_is_json_with_its_status(served: int) -> None:  # noqa: F811
    long_url = b"GET /healthz?" + b"x" * (100 << 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    big_header = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * (100 << 10) + b"\r\n\r\n"
    bad_length = b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"
    for request, status, words in (
        (long_url, b"414", "the URL is over 8192 bytes"),
        (big_header, b"431", "headers are over 65536 bytes"),
        (bad_length, b"400", ""),
    ):
        head, body = exchange(served, request)
        assert head.startswith(b"HTTP/1.1 " + status), head
        assert b"content-type: application/json" in head.lower(), head
        assert words in json.loads(body)["detail"]
    assert httpx.get(f"http://127.0.0.1:{served}/healthz").status_code == 200


def test_a_large_answer_is_gzipped_for_who_asks(served: int) -> None:  # noqa: F811
    url = f"http://127.0.0.1:{served}/openapi.json"
    plain = httpx.get(url, headers={"Accept-Encoding": "identity"})
    assert plain.headers.get("content-encoding") is None
    with httpx.stream("GET", url, headers={"Accept-Encoding": "gzip"}) as answer:
        assert answer.headers["content-encoding"] == "gzip"
        raw = b"".join(answer.iter_raw())
    assert len(raw) < len(plain.content) / 3
    assert json.loads(gzip.decompress(raw)) == plain.json()
