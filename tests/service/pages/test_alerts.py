"""The alerts page (service.pages.alerts) and its twin /alerts.json, through a real server on
SQLite and PostgreSQL: without a state asked for, the alerts that need attention (suspected,
open, acknowledged), with no stand-in while one does; "all" every state; a repository's alerts
alone where one is named, a 404 for a repository kernelwatch does not know; at most `limit`
alerts, newest first; each group naming its alerts by id; and the page rendering them with a
link to the twin of the same query."""

from __future__ import annotations

import httpx
import pytest

from service.models.alert import ACTIVE_STATES
from tests.conftest import ADMIN_TOKEN
from tests.documents import sha_for
from tests.live_server import LiveServer
from tests.service.evaluation.alerts.test_measure_alerts import GROWN, STEADY, post, steady_line


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


@pytest.fixture
def opened(client: httpx.Client) -> list[dict]:
    """Two open alerts, newest first: peak memory grew in acme/kernels, then in acme/other."""
    post(client, "grown", steady_line(client), GROWN)
    post(client, "other", [], 1e9, repository="acme/other")
    post(client, "other-grown", ["other"], GROWN, repository="acme/other")
    return client.get("/api/v1/alerts").json()


def test_the_default_is_what_needs_attention_newest_first(
    client: httpx.Client, opened: list[dict]
) -> None:
    data = client.get("/alerts.json").json()
    assert data["states"] == list(ACTIVE_STATES) and data["notice"] is None
    assert [a["id"] for a in data["alerts"]] == [a["id"] for a in opened]
    assert opened[0]["id"] > opened[1]["id"]
    grouped = sorted(i for g in data["groups"] for i in g["alert_ids"])
    assert grouped == sorted(a["id"] for a in data["alerts"]) and "alerts" not in data["groups"][0]
    # Fixed, acme/kernels' alert needs no attention: listed only where every state is asked for.
    post(client, "back", ["grown", "c2", "c1", "c0"], STEADY)
    active = client.get("/alerts.json").json()
    assert [a["commit"] for a in active["alerts"]] == [sha_for("other-grown")]
    everything = client.get("/alerts.json", params={"state": "all"}).json()
    assert everything["states"] == [] and len(everything["alerts"]) == 2


def test_a_repository_and_a_limit_narrow_the_list(client: httpx.Client, opened: list[dict]) -> None:
    newest = client.get("/alerts.json", params={"limit": 1}).json()
    assert [a["commit"] for a in newest["alerts"]] == [sha_for("other-grown")]
    mine = client.get("/alerts.json", params={"repository": "acme/kernels"}).json()
    assert [a["commit"] for a in mine["alerts"]] == [sha_for("grown")]
    unknown = client.get("/alerts.json", params={"repository": "acme/none"})
    assert unknown.status_code == 404 and "acme/none" in unknown.json()["detail"]


def test_the_page_shows_the_alerts_and_links_its_twin(
    client: httpx.Client, opened: list[dict]
) -> None:
    page = client.get("/alerts", params={"repository": "acme/kernels"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<title>Alerts · kernelwatch</title>" in page.text
    assert 'href="/alerts.json?repository=acme%2Fkernels"' in page.text
    (mine, other) = sorted(opened, key=lambda a: a["series"]["repository"])
    assert f'id="alert-{mine["id"]}"' in page.text
    assert f'id="alert-{other["id"]}"' not in page.text
