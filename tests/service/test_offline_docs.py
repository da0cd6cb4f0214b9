"""/docs and /redoc in a real headless Chromium with every request off the server refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.dashboards.conftest import browser  # noqa: F401  (the shared Chromium fixture)
from tests.live_server import LiveServer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.parametrize("db_url", ["sqlite"], indirect=True),
]


@pytest.fixture
def offline_page(browser: Any, server: LiveServer) -> Iterator[tuple[Any, list[str]]]:  # noqa: F811
    """A tab that may reach the live server only: anything else is aborted and recorded."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    refused: list[str] = []

    def only_the_server(route: Any) -> None:
        if route.request.url.startswith(server.url):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort("internetdisconnected")

    context.route("**/*", only_the_server)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    yield page, refused + errors
    context.close()


def test_swagger_ui_renders_the_whole_api_without_internet(
    offline_page: tuple[Any, list[str]], server: LiveServer
) -> None:
    page, problems = offline_page
    answer = page.goto(f"{server.url}/docs")
    assert answer is not None and answer.ok
    page.wait_for_selector(".swagger-ui .info .title", timeout=20_000)
    assert "kernelwatch" in page.inner_text(".swagger-ui .info .title")
    page.wait_for_selector(".opblock", timeout=20_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/v1/runs" in [p.replace("\u200b", "") for p in paths]
    assert problems == []


def test_redoc_renders_the_whole_api_without_internet(
    offline_page: tuple[Any, list[str]], server: LiveServer
) -> None:
    page, problems = offline_page
    answer = page.goto(f"{server.url}/redoc")
    assert answer is not None and answer.ok
    page.wait_for_selector(".api-content h1", timeout=20_000)
    assert "kernelwatch" in page.inner_text(".api-content h1")
    assert page.get_by_text("/api/v1/runs", exact=False).count() > 0
    assert problems == []
