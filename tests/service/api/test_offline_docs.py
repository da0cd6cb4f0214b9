"""/docs and /redoc in a real headless Chromium with every request off the server refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.live_server import LiveServer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.parametrize("db_url", ["sqlite"], indirect=True),
]


@pytest.fixture
def offline_page(browser: Any, server: LiveServer) -> Iterator[tuple[Any, list[str]]]:
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


@pytest.mark.parametrize(
    ("path", "title", "operation"),
    [
        ("/docs", ".swagger-ui .info .title", ".opblock-summary-path[data-path='/api/v1/runs']"),
        ("/redoc", ".api-content h1", 'text="/api/v1/runs"'),
    ],
)
def test_the_api_docs_render_without_internet(
    offline_page: tuple[Any, list[str]], server: LiveServer, path: str, title: str, operation: str
) -> None:
    """Swagger UI and ReDoc load their assets from the service and render the whole API."""
    page, problems = offline_page
    answer = page.goto(f"{server.url}{path}")
    assert answer is not None and answer.ok
    page.wait_for_selector(title, timeout=20_000)
    assert "kernelwatch" in page.inner_text(title)
    page.wait_for_selector(operation, state="attached", timeout=20_000)
    assert problems == []
