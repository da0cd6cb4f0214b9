"""The first five minutes of a new user: `kernelwatch demo`, then every link clicked once.

Starts the demo as a person would, fetches the overview, follows every link on it and on the
commit, alert and trend pages it leads to (once each), and each page's JSON twin. Fails on any
4xx or 5xx, on a page whose main table is empty, and on an alerts view with nothing in it.
"""

from __future__ import annotations

import html
import re
from collections import deque
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from tests.e2e import demo_process

FOLLOWED = ("/", "/commits/", "/alerts", "/trends")  # pages whose own links are followed too
MAX_FETCHES = 400


def links(page: str) -> list[str]:
    """The page's links within the service (no static files, no anchors)."""
    out = []
    for href in re.findall(r'href="([^"]+)"', page):
        href = html.unescape(href).split("#")[0]
        if href.startswith("/") and not href.startswith("/static/"):
            out.append(href)
    return out


def main_table_rows(page: str) -> int | None:
    """Data rows of the first table in the page's <main>, None when it has no table."""
    main = page.split("<main", 1)[-1]
    table = re.search(r"<table.*?</table>", main, re.S)
    return None if table is None else len(re.findall(r"<td[\s>]", table.group(0)))


def test_every_link_of_the_demo_answers_and_no_main_table_is_empty(tmp_path: Path) -> None:
    with demo_process(tmp_path) as url, httpx.Client(base_url=url, timeout=60) as client:
        visited, problems = crawl(client)
    assert problems == []
    kinds = {urlsplit(p).path.split("/")[1] for p in visited}
    assert {"", "commits", "alerts", "trends", "compare", "docs"} <= kinds, kinds
    assert any(p.endswith(".json") or ".json?" in p for p in visited)


def crawl(client: httpx.Client) -> tuple[set[str], list[str]]:
    visited: set[str] = set()
    problems: list[str] = []
    queue = deque([("/", True)])
    while queue and len(visited) < MAX_FETCHES:
        path, follow = queue.popleft()
        if path in visited:
            continue
        visited.add(path)
        answer = client.get(path)
        if answer.status_code >= 400:
            problems.append(f"{path}: {answer.status_code} {answer.text[:200]}")
            continue
        if "text/html" not in answer.headers.get("content-type", ""):
            continue
        problems += judge(path, answer.text)
        twin = re.search(r'<link rel="alternate" type="application/json" href="([^"]+)"',
                         answer.text)  # fmt: skip
        if twin:
            queue.appendleft((html.unescape(twin.group(1)), False))
        if follow:
            for link in links(answer.text):
                page = urlsplit(link).path
                again = page == "/" or any(page.startswith(p) for p in FOLLOWED[1:])
                queue.append((link, again and link not in visited))
    assert len(visited) < MAX_FETCHES, "the crawl did not end: links without end?"
    return visited, problems


def judge(path: str, page: str) -> list[str]:
    """What a new user would see as broken or empty on this page."""
    route = urlsplit(path).path
    if route == "/alerts" and 'id="alert-' not in page:
        return [f"{path}: the alerts view shows no alert"]
    tabled = route in ("/", "/trends") or route.startswith("/commits/") or "base=" in path
    if tabled and main_table_rows(page) == 0:
        return [f"{path}: its main table is empty"]
    return []
