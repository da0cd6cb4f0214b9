"""runner.agent.client: the runner's side of the service's REST API. Which answers are worth
another try (no answer, 5xx, 408/425/429) and which are final (other 4xx, a redirect), what each
error message says (method, URL, status, the service's detail; never the token), and what the
calls send. The service is stood in for by httpx.MockTransport, which answers each request
with a chosen response: what is tested is the client's reading of those answers, not HTTP."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

import httpx
import pytest

from runner.agent.client import ServiceClient, ServiceRefused, ServiceUnavailable

TOKEN = "kwr_secret-token-0123456789"
SERVER = "http://kw.example.com:8000"


def client_answering(
    answer: Callable[[httpx.Request], httpx.Response], seen: list[httpx.Request] | None = None
) -> ServiceClient:
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            request.read()
            seen.append(request)
        return answer(request)

    return ServiceClient(SERVER + "/", TOKEN, transport=httpx.MockTransport(handler))


@pytest.mark.parametrize("status", [500, 502, 503, 504, 408, 425, 429])
def test_a_failing_or_overloaded_service_is_worth_another_try(status: int) -> None:
    with (
        client_answering(lambda _: httpx.Response(status, json={"detail": "busy"})) as client,
        pytest.raises(ServiceUnavailable) as caught,
    ):
        client.heartbeat()
    assert caught.value.status == status
    assert str(caught.value) == (f"POST {SERVER}/api/v1/runners/heartbeat answered {status}: busy")


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 422])
def test_any_other_4xx_is_final(status: int) -> None:
    with (
        client_answering(lambda _: httpx.Response(status, json={"detail": "no"})) as client,
        pytest.raises(ServiceRefused) as caught,
    ):
        client.extend_lease(7, "kwa_attempt")
    assert (caught.value.method, caught.value.status) == ("POST", status)
    assert caught.value.url == f"{SERVER}/api/v1/jobs/7/lease"


def test_a_redirect_is_refused_and_names_the_address_to_give_instead() -> None:
    moved = httpx.Response(308, headers={"location": "https://kw.example.com/api/v1/runs"})
    with client_answering(lambda _: moved) as client, pytest.raises(ServiceRefused) as caught:
        client.post_run({"run_id": "r"})
    assert caught.value.detail == (
        "redirected to https://kw.example.com/api/v1/runs; give that address as the server URL"
    )


def test_no_answer_at_all_says_so_without_a_status() -> None:
    def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    with client_answering(unreachable) as client, pytest.raises(ServiceUnavailable) as caught:
        client.claim()
    assert caught.value.status is None
    assert str(caught.value) == (
        f"POST {SERVER}/api/v1/jobs/claim: no answer from the service "
        "(ConnectError: [Errno 111] Connection refused)"
    )


@pytest.mark.parametrize(
    ("response", "detail"),
    [
        # FastAPI's 422 carries a list: the body itself is the most a person can read
        (
            httpx.Response(422, json={"detail": [{"loc": ["body"]}]}),
            '{"detail":[{"loc":["body"]}]}',
        ),
        (httpx.Response(404, text="  not here \n"), "not here"),
        (httpx.Response(404, json=["a", "list"]), '["a","list"]'),
        (httpx.Response(409, text=""), "Conflict"),  # the reason phrase, at least
        (httpx.Response(400, text="x" * 600), "x" * 500),
    ],
    ids=["detail-not-a-string", "plain-text", "json-list", "empty", "long-text"],
)
def test_the_detail_is_the_services_own_or_the_body_shortened(
    response: httpx.Response, detail: str
) -> None:
    with (
        client_answering(lambda _: response) as client,
        pytest.raises(ServiceRefused) as caught,
    ):
        client.release(3, "kwa_attempt")
    assert caught.value.detail == detail


def test_an_answer_that_is_not_json_is_worth_another_try() -> None:
    """A 200 with an HTML page is a proxy in the way, not the service's word on the request."""
    page = httpx.Response(200, text="<html>maintenance</html>")
    with (
        client_answering(lambda _: page) as client,
        pytest.raises(ServiceUnavailable) as caught,
    ):
        client.heartbeat()
    assert caught.value.status == 200
    assert caught.value.detail == "the body is not JSON: '<html>maintenance</html>'"


def test_a_claim_with_nothing_queued_is_none() -> None:
    for empty in (httpx.Response(204), httpx.Response(200, json={})):
        with client_answering(lambda _, e=empty: e) as client:
            assert client.claim() is None
    with client_answering(lambda _: httpx.Response(200, json=[1, 2])) as client:
        assert client.heartbeat() == {"answer": [1, 2]}  # a JSON answer that is no object


def test_every_call_carries_the_token_but_no_message_or_repr_does() -> None:
    seen: list[httpx.Request] = []
    refused = httpx.Response(401, json={"detail": "unknown runner token"})
    with (
        client_answering(lambda _: refused, seen) as client,
        pytest.raises(ServiceRefused) as caught,
    ):
        client.register("gpu-host", {"gpu": "h100"}, {"driver": "580"})
        assert repr(client) == f"ServiceClient({SERVER!r})"  # the trailing slash dropped
    (request,) = seen
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["user-agent"] == "kernelwatch-runner"
    assert json.loads(request.content) == {
        "host": "gpu-host",
        "labels": {"gpu": "h100"},
        "environment": {"driver": "580"},
    }
    assert TOKEN not in str(caught.value)


def test_long_logs_and_reasons_are_sent_by_their_last_characters() -> None:
    seen: list[httpx.Request] = []
    with client_answering(lambda _: httpx.Response(200, json={}), seen) as client:
        client.fail(5, "kwa_attempt", "a" + "b" * 65_536, retry=True)
        client.report_unhealthy("x" + "y" * 2000)
    failed, health = (json.loads(r.content) for r in seen)
    tail = failed.pop("log_tail")
    assert failed == {"attempt_token": "kwa_attempt", "retry": True}
    assert tail == "b" * len(tail) and 59_900 < len(tail) <= 60_000  # its JSON within 60,000 B
    assert health == {"healthy": False, "reason": "y" * 2000}
    assert [r.url.path for r in seen] == ["/api/v1/jobs/5/fail", "/api/v1/runners/health"]


def test_a_document_with_a_nan_reaches_the_service_as_json_text() -> None:
    """The service names the offending field in its 422; httpx's own JSON would refuse NaN."""
    seen: list[httpx.Request] = []
    stored = httpx.Response(201, json={"run_id": "r", "stored": True})
    with client_answering(lambda _: stored, seen) as client:
        assert client.post_run({"median": math.nan}) == {"run_id": "r", "stored": True}
    assert seen[0].content == b'{"median": NaN}'
    assert seen[0].headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("url", "token", "says"),
    [
        ("http://", TOKEN, "server URL 'http://' must be http(s)://HOST[:PORT]"),
        ("kw.example.com", TOKEN, "must be http(s)://HOST[:PORT]"),
        (SERVER, "", "a runner token is required"),
    ],
)
def test_a_client_that_could_never_work_is_refused_at_once(url: str, token: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        ServiceClient(url, token)


@pytest.mark.parametrize("char", ["b", "\u00e9", "\u6f22", "\U0001f600", "\x01", "\n", '"'])
def test_a_failure_fits_the_services_small_body_whatever_the_logs_characters(char: str) -> None:
    """64 KiB of body at most (service.api.small_bodies); the log's last characters kept."""
    seen: list[httpx.Request] = []
    with client_answering(lambda _: httpx.Response(200, json={}), seen) as client:
        client.fail(5, "kwa_attempt", "start " + char * 70_000 + " end")
    body = seen[0].content
    assert len(body) <= 64 * 1024
    tail = json.loads(body)["log_tail"]
    assert tail.endswith(char * 100 + " end") and len(body) > 50_000
