"""HTTP requests counted (service.api.http_metrics): each answered request once, under its route's
template (never the raw path, so the series stay few), its method and its status, with its
seconds by route; a path no route matches as `unmatched`, whatever /static/ serves as `/static`;
the refusals of the middlewares inside it counted with their status; and every request counted
before its last byte leaves, so that a scrape right after an answer finds it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from service.api.app import create_app
from service.core.settings import Settings
from tests.conftest import ADMIN_TOKEN
from tests.live_server import LiveServer

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(client: httpx.Client) -> Samples:
    answer = client.get("/metrics")
    assert answer.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }


def requests(samples: Samples, route: str, method: str, status: int) -> float:
    labels = (("method", method), ("route", route), ("status", str(status)))
    return samples.get(("kernelwatch_http_requests_total", labels), 0.0)


def routes_counted(samples: Samples) -> set[str]:
    return {
        dict(labels)["route"]
        for name, labels in samples
        if name == "kernelwatch_http_requests_total"
    }


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def test_a_request_is_counted_under_its_routes_template_not_its_path(
    client: httpx.Client,
) -> None:
    before = scrape(client)
    assert client.get("/api/v1/jobs/987654").status_code == 404
    after = scrape(client)
    template = "/api/v1/jobs/{job_id:int}"
    assert requests(after, template, "GET", 404) - requests(before, template, "GET", 404) == 1
    assert not any("987654" in route for route in routes_counted(after))


def test_a_path_no_route_matches_is_counted_as_unmatched(client: httpx.Client) -> None:
    before = scrape(client)
    assert client.get("/no/such/page-424242").status_code == 404
    after = scrape(client)
    assert requests(after, "unmatched", "GET", 404) - requests(before, "unmatched", "GET", 404) == 1
    assert not any("424242" in route for route in routes_counted(after))


def test_static_files_are_counted_as_one_route(client: httpx.Client) -> None:
    before = scrape(client)
    assert client.get("/static/style.css").status_code == 200
    assert client.get("/static/pages.js").status_code == 200
    assert client.get("/static/no-such-file.css").status_code == 404
    after = scrape(client)
    assert requests(after, "/static", "GET", 200) - requests(before, "/static", "GET", 200) == 2
    assert requests(after, "/static", "GET", 404) - requests(before, "/static", "GET", 404) == 1


def test_method_and_status_are_labels_of_their_own(client: httpx.Client) -> None:
    """A 400 that a route's dependency answers (an unknown query parameter) is its route's."""
    before = scrape(client)
    assert client.get("/api/v1/alerts").status_code == 200
    assert client.get("/api/v1/alerts", params={"stat": "open"}).status_code == 400
    assert client.post("/api/v1/alerts").status_code == 405
    after = scrape(client)
    for method, status in (("GET", 200), ("GET", 400), ("POST", 405)):
        moved = requests(after, "/api/v1/alerts", method, status)
        assert moved - requests(before, "/api/v1/alerts", method, status) == 1, (method, status)


def test_the_seconds_are_observed_by_route(client: httpx.Client) -> None:
    key = ("kernelwatch_http_request_seconds_count", (("route", "/api/v1/runners"),))
    before = scrape(client)
    for _ in range(3):
        assert client.get("/api/v1/runners").status_code == 200
    after = scrape(client)
    assert after[key] - before.get(key, 0.0) == 3
    total = ("kernelwatch_http_request_seconds_sum", (("route", "/api/v1/runners"),))
    assert after[total] > before.get(total, 0.0)


def test_a_refusal_by_an_inner_middleware_is_counted_with_its_status(settings: Settings) -> None:
    """HttpMetrics is the outermost middleware: the read token's 401, answered before any route
    is matched, is counted too."""
    settings.read_token = "test-read-token"

    def refused(samples: Samples) -> float:
        return sum(
            value
            for (name, labels), value in samples.items()
            if name == "kernelwatch_http_requests_total" and ("status", "401") in labels
        )

    with LiveServer(create_app(settings, migrate=False)) as live, live.client(ADMIN_TOKEN) as c:
        before = scrape(c)
        assert httpx.get(f"{live.url}/api/v1/alerts").status_code == 401
        after = scrape(c)
    assert refused(after) - refused(before) == 1
