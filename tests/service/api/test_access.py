"""Private reads (service.api.access): `may_read` opens them to the read token or the admin token,
and to anyone where no read token is set; the ReadAccess middleware answers a GET or a HEAD
without one 401 with a Bearer challenge, takes the token of an `Authorization: Bearer` header
whatever the case of the scheme and the spaces around the token, and leaves /healthz, /static/
and every other method to their own rules. (tests/hardening/test_access.py walks every GET
route of the app behind the read token.)"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from service.api.access import may_read
from service.api.app import create_app
from service.core.settings import Settings
from tests.conftest import ADMIN_TOKEN
from tests.live_server import LiveServer

READ_TOKEN = "test-read-token"


def settings_with(read_token: str | None, admin_token: str | None = ADMIN_TOKEN) -> Settings:
    return Settings(read_token=read_token, admin_token=admin_token)


@pytest.mark.parametrize("token", [None, "", "anything", READ_TOKEN])
def test_without_a_read_token_anyone_may_read(token: str | None) -> None:
    assert may_read(settings_with(None), token) is True


@pytest.mark.parametrize(
    ("token", "opens"),
    [
        (READ_TOKEN, True),
        (ADMIN_TOKEN, True),
        (None, False),
        ("", False),
        (READ_TOKEN[:-1], False),
        (READ_TOKEN + "x", False),
        (READ_TOKEN.upper(), False),
    ],
)
def test_the_read_token_or_the_admin_token_opens_the_reads(token: str | None, opens: bool) -> None:
    assert may_read(settings_with(READ_TOKEN), token) is opens


@pytest.mark.parametrize("admin_token", [None, ""])
def test_with_no_admin_token_set_only_the_read_token_opens(admin_token: str | None) -> None:
    settings = settings_with(READ_TOKEN, admin_token)
    assert may_read(settings, READ_TOKEN) is True
    assert may_read(settings, "") is False
    assert may_read(settings, ADMIN_TOKEN) is False


@pytest.fixture
def private(settings: Settings) -> Iterator[LiveServer]:
    settings.read_token = READ_TOKEN
    with LiveServer(create_app(settings, migrate=False)) as live:
        yield live


def get(live: LiveServer, path: str, authorization: str | None = None) -> httpx.Response:
    headers = {"Authorization": authorization} if authorization is not None else {}
    return httpx.get(f"{live.url}{path}", headers=headers)


def test_a_read_without_the_token_is_401_with_a_bearer_challenge(private: LiveServer) -> None:
    answer = get(private, "/api/v1/alerts")
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == 'Bearer realm="kernelwatch"'
    assert "KERNELWATCH_READ_TOKEN" in answer.json()["detail"]
    assert httpx.head(f"{private.url}/api/v1/alerts").status_code == 401


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (f"Bearer {READ_TOKEN}", 200),
        (f"bearer {READ_TOKEN}", 200),
        (f"BEARER {READ_TOKEN}", 200),
        (f"Bearer   {READ_TOKEN}", 200),
        (f"Bearer {ADMIN_TOKEN}", 200),
        (f"Basic {READ_TOKEN}", 401),
        (f"Token {READ_TOKEN}", 401),
        (READ_TOKEN, 401),
        ("Bearer", 401),
    ],
)
def test_the_token_is_read_from_a_bearer_header_only(
    private: LiveServer, authorization: str, status: int
) -> None:
    assert get(private, "/api/v1/alerts", authorization).status_code == status


def test_healthz_and_static_files_are_open(private: LiveServer) -> None:
    assert get(private, "/healthz").status_code == 200
    assert get(private, "/static/style.css").status_code == 200
    # Only /healthz itself: a path beside it is a read like any other.
    assert get(private, "/healthz.json").status_code == 401


def test_other_methods_keep_their_own_rules(private: LiveServer) -> None:
    """A write without any token is refused by its route's own token check, not as a read."""
    write = httpx.post(f"{private.url}/api/v1/runs", json={})
    assert write.status_code == 401
    assert "KERNELWATCH_READ_TOKEN" not in write.json()["detail"]
    assert write.json()["detail"] == "missing 'Authorization: Bearer <token>' header"
    # OPTIONS says which methods the path takes, which is no read of its data.
    options = httpx.options(f"{private.url}/api/v1/alerts")
    assert (options.status_code, options.headers["Allow"]) == (204, "GET, OPTIONS")
