"""The compare page (service.pages.compare) and its twin /compare.json, through a real server on
SQLite and PostgreSQL: without both commits, recent commits to pick from (a named repository's
alone); with both, the comparison and the q it is judged at, and the page's bars coloured as a
verdict would call each row (regressed or improved only where significant), with both medians
and q on hover; no bars where the two commits share no series."""

from __future__ import annotations

import httpx
import pytest

from dashboards.format import short_sha
from service.analysis.verdicts import Q
from tests.conftest import ADMIN_TOKEN
from tests.dashboards.test_pages import figure
from tests.documents import document, sha_for
from tests.live_server import LiveServer


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, label: str, medians: dict[str, float], **kw: str) -> None:
    doc = document(commit=label, medians=medians, seed=len(label), spread=0.001, **kw)
    assert client.post("/api/v1/runs", json=doc).status_code == 201


def test_without_both_commits_recent_ones_are_offered(client: httpx.Client) -> None:
    post(client, "mine", {"k": 100.0})
    post(client, "theirs", {"k": 100.0}, repository="acme/other")
    data = client.get("/compare.json", params={"base": sha_for("mine")}).json()
    assert (data["base"], data["head"], data["comparison"]) == (sha_for("mine"), None, None)
    assert set(data["suggestions"]) >= {sha_for("mine"), sha_for("theirs")}
    narrowed = client.get("/compare.json", params={"repository": "acme/other"}).json()
    assert narrowed["suggestions"] == [sha_for("theirs")]
    assert client.get("/compare.json", params={"repository": "acme/none"}).status_code == 404


def test_bars_are_coloured_as_a_verdict_would_call_each_row(client: httpx.Client) -> None:
    post(client, "base", {"slower": 100.0, "faster": 100.0, "same": 100.0})
    post(client, "head", {"slower": 110.0, "faster": 80.0, "same": 100.0})
    query = {"base": sha_for("base"), "head": sha_for("head")}
    data = client.get("/compare.json", params=query).json()
    assert data["q_threshold"] == Q
    kernels = [r["series"]["kernel"] for r in data["comparison"]["rows"]]
    assert kernels == ["faster", "slower", "same"]
    page = client.get("/compare", params=query)
    assert page.status_code == 200 and "<title>Compare · kernelwatch</title>" in page.text
    changes = figure(page.text, "changes")
    assert changes["layout"]["title"]["text"] == (
        f"{short_sha(sha_for('base'))} → {short_sha(sha_for('head'))}"
    )
    (bars,) = [t for t in changes["data"] if t["type"] == "bar"]
    pairs = zip(bars["y"], bars["customdata"], strict=True)
    called = {label.split(" ")[-1]: custom[0] for label, custom in pairs}
    assert called == {"faster": "improved", "slower": "regressed", "same": "unchanged"}
    assert all(" · q=" in hover for _, hover in bars["customdata"])


def test_commits_that_share_no_series_draw_no_bars(client: httpx.Client) -> None:
    post(client, "base", {"old": 100.0})
    post(client, "head", {"new": 100.0})
    query = {"base": sha_for("base"), "head": sha_for("head")}
    comparison = client.get("/compare.json", params=query).json()["comparison"]
    assert comparison["rows"] == []
    assert [s["kernel"] for s in comparison["only_in_base"]] == ["old"]
    assert 'id="figure-data-changes"' not in client.get("/compare", params=query).text
