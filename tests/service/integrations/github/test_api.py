"""GitHub's REST API as kernelwatch calls it (service.integrations.github.api), against a local
stand-in for GitHub on 127.0.0.1: calls only with a token that is not blank, and only for a
repository named as GitHub names them; the token sent in the Authorization header alone and
never logged; one request tried again after each of RETRY_DELAYS on a transport error or a 5xx,
never on a 4xx, answering the last answer (None where none came); and the words GitHub answered
with, cut to 200 characters."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import httpx
import pytest
from pydantic import SecretStr

from service.core.settings import Settings
from service.integrations.github import api
from tests.service.integrations.github.test_statuses import Answer, FakeGitHub

TOKEN = "ghp_test0123456789abcdefSECRET"
PAYLOAD = {"state": "success", "context": "kernelwatch"}


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "RETRY_DELAYS", (0.01, 0.01))


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake


def settings_for(url: str, timeout: float = 2.0) -> Settings:
    token = SecretStr(f"  {TOKEN}\n")
    return Settings(github_token=token, github_api_url=url, github_timeout_seconds=timeout)


def post(settings: Settings, url: str) -> httpx.Response | None:
    return api.request(settings, "POST", url, PAYLOAD, what="status test")


@pytest.mark.parametrize(
    ("token", "enabled"),
    [(None, False), ("", False), (" \n", False), ("ghp_x", True), (" ghp_x ", True)],
)
def test_only_a_token_that_is_not_blank_enables_the_calls(token: str | None, enabled: bool) -> None:
    secret = SecretStr(token) if token is not None else None
    assert api.enabled(Settings(github_token=secret)) is enabled


GITHUB_NAMES = [
    "acme/kernels",
    "a/b",
    "Acme-Corp/kernels.v2",
    "a" * 39 + "/x",
    "acme/" + "k" * 100,
    "acme/.github",
    "acme/_private",
]
OTHER_NAMES = [
    "local-kernels",
    "acme/kernels.git",
    "acme/.",
    "acme/..",
    "-acme/kernels",
    "a" * 40 + "/x",
    "acme/" + "k" * 101,
    "acme/ker nels",
    "acme/kernels/extra",
    "acme_x/k",
    "/acme/k",
    "acme/",
]


@pytest.mark.parametrize("name", GITHUB_NAMES)
def test_repositories_named_as_github_names_them(name: str) -> None:
    assert api.is_github_repository(name)


@pytest.mark.parametrize("name", OTHER_NAMES)
def test_names_github_cannot_have_are_not_its_repositories(name: str) -> None:
    assert not api.is_github_repository(name)


def test_a_request_sends_the_token_only_in_the_authorization_header(github: FakeGitHub) -> None:
    answer = post(settings_for(github.url), f"{github.url}/repos/acme/kernels/statuses/abc")
    assert answer is not None and answer.status_code == 201
    (sent,) = github.requests
    headers = {k.lower(): v for k, v in sent.headers.items()}
    assert headers["authorization"] == f"Bearer {TOKEN}"  # the setting's spaces stripped
    assert headers["accept"] == "application/vnd.github+json"
    assert headers["x-github-api-version"] == api.API_VERSION
    assert headers["user-agent"] == "kernelwatch"
    assert sent.path == "/repos/acme/kernels/statuses/abc" and sent.body == PAYLOAD
    assert [k for k, v in headers.items() if TOKEN in v] == ["authorization"]


def test_a_5xx_is_tried_again_and_the_next_answer_returned(
    github: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=api.__name__)
    github.script = [Answer(502, body={"message": f"token {TOKEN} upset us"}), Answer(201)]
    answer = post(settings_for(github.url), f"{github.url}/repos/acme/kernels/statuses/abc")
    assert answer is not None and answer.status_code == 201
    assert len(github.requests) == 2
    assert "answered 502 Bad Gateway: token *** upset us (attempt 1); retrying" in caplog.text
    assert TOKEN not in caplog.text


@pytest.mark.parametrize("status", [401, 404, 422])
def test_a_4xx_is_answered_at_once(github: FakeGitHub, status: int) -> None:
    github.script = [Answer(status, body={"message": "no"})]
    answer = post(settings_for(github.url), f"{github.url}/repos/acme/kernels/statuses/abc")
    assert answer is not None and answer.status_code == status
    assert len(github.requests) == 1


def test_a_5xx_every_time_gives_up_after_the_last_attempt_with_its_answer(
    github: FakeGitHub,
) -> None:
    assert api.attempts() == len(api.RETRY_DELAYS) + 1 == 3
    github.script = [Answer(500), Answer(503), Answer(502), Answer(201)]
    answer = post(settings_for(github.url), f"{github.url}/repos/acme/kernels/statuses/abc")
    assert answer is not None and answer.status_code == 502
    assert len(github.requests) == 3


def test_a_timeout_is_tried_again(github: FakeGitHub, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=api.__name__)
    github.script = [Answer(201, delay=1.0), Answer(201)]
    settings = settings_for(github.url, timeout=0.2)
    answer = post(settings, f"{github.url}/repos/acme/kernels/statuses/abc")
    assert answer is not None and answer.status_code == 201
    assert "GitHub status test: timed out (attempt 1)" in caplog.text


def test_no_answer_at_all_is_none_after_every_attempt(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=api.__name__)
    with socket.socket() as closed:  # a port nothing listens on once closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    assert post(settings_for(url), f"{url}/repos/acme/kernels/statuses/abc") is None
    warned = [r.getMessage() for r in caplog.records if r.name == api.__name__]
    assert [m.endswith(f"(attempt {n})") for n, m in enumerate(warned, start=1)] == [True] * 3
    assert TOKEN not in caplog.text


def answer_of(status: int, **kw: object) -> httpx.Response:
    return httpx.Response(status, request=httpx.Request("POST", "https://api.github.com"), **kw)


def test_the_message_is_githubs_words_after_the_reason() -> None:
    assert api.message(answer_of(422, json={"message": "Validation Failed"})) == (
        "Unprocessable Entity: Validation Failed"
    )
    long = api.message(answer_of(500, json={"message": "x" * 500}))
    assert long == "Internal Server Error: " + "x" * 200
    assert api.message(answer_of(502, text="<html>proxy</html>")) == "Bad Gateway"
    assert api.message(answer_of(401, json={"message": 7})) == "Unauthorized"
    assert api.message(answer_of(404, json=["not", "a", "dict"])) == "Not Found"


def test_redaction_hides_the_token_and_leaves_text_alone_without_one() -> None:
    assert api.redact(f"Bearer {TOKEN} and {TOKEN}", TOKEN) == "Bearer *** and ***"
    assert api.redact(ValueError("plain words"), TOKEN) == "plain words"
    assert api.redact("nothing to hide", "") == "nothing to hide"


def test_the_token_is_the_settings_token_stripped() -> None:
    assert api.token(settings_for("http://127.0.0.1:9")) == TOKEN
