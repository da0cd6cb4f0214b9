"""Fixtures of the dashboard tests: a history with profiles and a regression, posted over HTTP."""

from __future__ import annotations

import copy
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tests.documents import BASE_TIME, example_document, sha_for
from tests.e2e import wait_for
from tests.live_server import LiveServer

ROOT = Path(__file__).resolve().parents[2]
SUMMARY_FIELDS = ("n", "median", "q1", "q3", "min", "max", "mean")


def rich_document(
    label: str, *, index: int, history: list[str], slower: dict[str, float] | None = None
) -> dict[str, Any]:
    """The example document (two gemm_fwd workloads and a training step with a timeline, ncu
    metrics, findings and build resources) at commit `label`, its samples scaled per workload."""
    doc = copy.deepcopy(example_document())
    doc["run_id"] = str(uuid.uuid4())
    doc["repository"] = {"name": "acme/kernels", "url": None}
    doc["commit"].update(
        sha=sha_for(label),
        parents=[sha_for(p) for p in history[-1:]],
        ancestors=[sha_for(a) for a in history[::-1]],
        message=f"{label}: tune the kernels\n\nbody of {label}",
        author_name=f"Author {index % 3}",
        committed_at=(BASE_TIME + timedelta(minutes=index)).isoformat(),
    )
    for w in doc["workloads"]:
        factor = (slower or {}).get(w["name"], 1.0) * (1 + 0.0005 * ((index * 7) % 5))
        timing = w["timing"]
        for field in SUMMARY_FIELDS:
            timing.pop(field, None)  # the service recomputes them from the samples
        for process in timing["processes"]:
            process["samples"] = [s * factor for s in process["samples"]]
    return doc


@dataclass
class History:
    labels: list[str]
    regressed_at: int  # index of the first slower commit

    def sha(self, i: int) -> str:
        return sha_for(self.labels[i])


def post_rich_history(
    client: httpx.Client, runs: int = 10, regressed_at: int = 7, slower: float = 1.12
) -> History:
    """`runs` commits on main; from `regressed_at` on the training step is `slower`x. Returns
    once the service has analysed them all, change points included (those follow the store in
    the background: a page read before and its twin read after would disagree)."""
    labels: list[str] = []
    for i in range(runs):
        label = f"r{i}"
        factor = {"train_step": slower} if i >= regressed_at else None
        doc = rich_document(label, index=i, history=labels, slower=factor)
        response = client.post("/api/v1/runs", json=doc)
        assert response.status_code == 201, response.text
        labels.append(label)

    def analysed(label: str) -> bool:
        metrics = client.get(f"/api/v1/commits/{sha_for(label)}/metrics").json()
        return not (metrics["analysis_pending"] or metrics["change_points_pending"])

    for label in labels:
        wait_for(lambda label=label: analysed(label), timeout=30)
    return History(labels, regressed_at)


@pytest.fixture
def admin(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as client:
        yield client


@pytest.fixture
def anonymous(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


# --- headless Chromium --------------------------------------------------------------------------

ARTIFACTS = Path(os.environ.get("KERNELWATCH_TEST_ARTIFACTS", ROOT / "test-artifacts"))


@dataclass
class BrowserPage:
    page: Any
    base_url: str
    console_errors: list[str]

    def open(self, path: str) -> Any:
        response = self.page.goto(self.base_url + path)
        assert response is not None and response.ok, f"{path}: {response and response.status}"
        self.page.wait_for_selector("body[data-figures-ready='true']", timeout=20_000)
        return response

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def browser_page(browser: Any, server: LiveServer) -> Iterator[BrowserPage]:
    """A fresh tab on the live server that records console errors and uncaught exceptions."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    yield BrowserPage(page, server.url, errors)
    context.close()
