"""plotly.js for the pages (service.pages.vendor): served by the service itself from the installed
plotly package, byte for byte, as JavaScript cached for a day, so that a page's figures draw on a
network without internet; and a page with a figure loads it from there, never from a CDN."""

from __future__ import annotations

import httpx
import pytest

from service.pages.render import plotly_js
from tests.conftest import ADMIN_TOKEN
from tests.documents import post_history
from tests.live_server import LiveServer

BUNDLE = "/static/vendor/plotly.min.js"


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def test_plotly_is_the_installed_packages_bundle_cached_for_a_day(client: httpx.Client) -> None:
    answer = client.get(BUNDLE)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/javascript")
    assert answer.headers["cache-control"] == "public, max-age=86400"
    assert answer.content == plotly_js().read_bytes()


def test_a_page_with_a_figure_loads_plotly_from_the_service(client: httpx.Client) -> None:
    post_history(client, 2, {"gemm_bias_act_f32": 100.0})
    page = client.get("/").text
    assert f'<script src="{BUNDLE}" defer></script>' in page
    assert "cdn.plot.ly" not in page
