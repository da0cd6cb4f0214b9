"""Query parameters the API does not take (service.api.strict_query, put on the API's routers by
service.api.app): a parameter the matched route does not declare, itself or through its
dependencies (described or not), is a 400 naming it, the path and every parameter the route
takes, before the route reads or stores anything; the pages' JSON twins, /metrics and GitHub's
webhook take any query, since a link, a scraper or GitHub may add their own."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi import Depends, FastAPI, Query
from sqlalchemy import Engine, func, select

from service.api.errors import install_error_handlers
from service.api.strict_query import refuse_unknown_query
from service.core.settings import Settings
from service.models import Run
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import Hook, _server


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def test_an_unknown_query_parameter_is_a_400_naming_what_the_route_takes(
    client: httpx.Client,
) -> None:
    """`?stat=open` for `?state=open` would otherwise answer every alert."""
    typo = client.get("/api/v1/alerts", params={"stat": "open"})
    assert typo.status_code == 400
    assert typo.json()["detail"] == (
        "unknown query parameter 'stat'; /api/v1/alerts takes: commit, limit, repository, "
        "series, state"
    )
    assert client.get("/api/v1/alerts", params={"state": "open"}).status_code == 200
    named = client.get("/api/v1/runs", params={"repo": "acme/kernels"})
    assert named.status_code == 400 and "'repo'" in named.json()["detail"]


def test_of_several_unknown_parameters_the_first_in_sorted_order_is_named(
    client: httpx.Client,
) -> None:
    answer = client.get("/api/v1/commits", params={"zz": "1", "aa": "2", "limit": "5"})
    assert answer.status_code == 400
    assert answer.json()["detail"] == (
        "unknown query parameter 'aa'; /api/v1/commits takes: branch, limit, repository"
    )


def test_a_parameter_left_out_of_the_description_is_still_taken(client: httpx.Client) -> None:
    """/api/v1/series keeps `params`, the older name of `workload_params`, out of the OpenAPI
    description; links that use it still work, and a refusal lists it."""
    older = client.get("/api/v1/series", params={"id": 1, "params": "{}"})
    assert older.status_code == 404, older.text  # no series 1: the parameter itself was taken
    refused = client.get("/api/v1/series", params={"id": 1, "param": "{}"}).json()["detail"]
    assert refused.startswith("unknown query parameter 'param'; /api/v1/series takes: ")
    assert "params" in refused.split("takes: ")[1].split(", ")


@pytest.mark.parametrize("path", ["/api/v1/runners", "/api/v1/alerts/5"])
def test_a_route_that_takes_no_query_parameter_says_none_for_the_path_asked(
    client: httpx.Client, path: str
) -> None:
    answer = client.get(path, params={"x": "1"})
    assert answer.status_code == 400
    assert answer.json()["detail"] == f"unknown query parameter 'x'; {path} takes: none"


def test_a_write_with_an_unknown_parameter_stores_nothing(
    client: httpx.Client, engine: Engine
) -> None:
    answer = client.post("/api/v1/runs", params={"dry_run": "1"}, json=document(commit="a"))
    assert answer.status_code == 400
    assert "'dry_run'" in answer.json()["detail"]
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 0


def test_the_pages_json_twins_and_metrics_take_any_query(client: httpx.Client) -> None:
    assert client.get("/alerts.json", params={"utm_source": "mail"}).status_code == 200
    assert client.get("/metrics", params={"name[]": "x"}).status_code == 200


def test_githubs_webhook_takes_any_query(settings: Settings) -> None:
    with _server(settings) as live, httpx.Client(base_url=live.url, params={"via": "x"}) as c:
        answer = Hook(c).send({"zen": "Keep it logically awesome."}, event="ping")
    assert answer.request.url.params["via"] == "x"
    assert answer.status_code == 200, answer.text
    assert "pong" in answer.json()["detail"]


def test_the_query_parameters_of_a_routes_dependencies_are_the_routes_too() -> None:
    """What the route's dependencies declare is taken like its own parameters (none of the
    API's routes has such a dependency today: this route is made for the rule)."""

    def paging(page: int = Query(1), per_page: int = Query(10)) -> tuple[int, int]:
        return page, per_page

    app = FastAPI()
    install_error_handlers(app)

    @app.get("/items", dependencies=[Depends(refuse_unknown_query)])
    def items(kind: str = "all", paged: tuple[int, int] = Depends(paging)) -> dict[str, object]:
        return {"kind": kind, "page": paged[0]}

    with LiveServer(app) as live, live.client() as c:
        taken = c.get("/items", params={"kind": "a", "page": "2", "per_page": "5"})
        refused = c.get("/items", params={"pages": "2"})
    assert taken.status_code == 200 and taken.json() == {"kind": "a", "page": 2}
    assert refused.status_code == 400
    assert refused.json()["detail"] == (
        "unknown query parameter 'pages'; /items takes: kind, page, per_page"
    )
