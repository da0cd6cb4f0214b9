"""What a path takes, said right (issue 49, item 5): OPTIONS answers every method of every
route of the path, a method a path does not take is a 405 naming them all, and a word where a
numeric id goes is no id (a 405 or a 404, never a 422 about an integer), through a real server."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tests.live_server import LiveServer


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/api/v1/jobs/claim", "OPTIONS, POST"),
        ("/api/v1/jobs", "GET, OPTIONS, POST"),
        ("/api/v1/jobs/7", "GET, OPTIONS"),
        ("/api/v1/alerts/1", "GET, OPTIONS, PATCH"),
        ("/api/v1/alerts/groups", "GET, OPTIONS"),
        ("/api/v1/runs", "GET, OPTIONS, POST"),
        ("/healthz", "GET, OPTIONS"),
    ],
)
def test_options_names_every_method_of_the_path(server: LiveServer, path: str, allow: str) -> None:
    answer = httpx.options(f"{server.url}{path}")
    assert (answer.status_code, answer.headers["allow"]) == (204, allow)


def test_a_method_the_path_does_not_take_is_405_naming_what_it_takes(server: LiveServer) -> None:
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    for method, path, allow in (
        ("GET", "/api/v1/jobs/claim", "OPTIONS, POST"),  # not job "claim"
        ("PATCH", "/api/v1/alerts/groups", "GET, OPTIONS"),  # not alert "groups"
        ("DELETE", "/api/v1/jobs", "GET, OPTIONS, POST"),
    ):
        answer = httpx.request(method, f"{server.url}{path}", headers=auth)
        assert answer.status_code == 405, (method, path, answer.text)
        assert answer.headers["allow"] == allow
        assert answer.json()["detail"] == f"{method} is not taken here; it takes {allow}"


def test_a_word_where_an_id_goes_is_no_such_endpoint(server: LiveServer) -> None:
    answer = httpx.get(f"{server.url}/api/v1/jobs/seven")
    assert answer.status_code == 404 and "no such endpoint" in answer.json()["detail"]
