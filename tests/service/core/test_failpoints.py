"""The chaos tests' pause points: configured from the environment, nothing when unset."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.core import failpoints


@pytest.fixture(autouse=True)
def _fresh_configuration(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(failpoints.ENV, raising=False)
    failpoints._configured.cache_clear()
    yield
    failpoints._configured.cache_clear()


def _paused(name: str) -> float:
    # A loop of its own in a thread of its own: other tests (Playwright's) may leave one
    # running in this thread.
    started = time.monotonic()
    with ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: asyncio.run(failpoints.pause(name))).result()
    return time.monotonic() - started


def test_a_configured_point_pauses_and_others_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(failpoints.ENV, "after_store=0.2, other=0")
    assert _paused("after_store") >= 0.2
    assert _paused("other") < 0.05
    assert _paused("unnamed") < 0.05


def test_unset_means_no_pause() -> None:
    assert failpoints._configured() == {}
    assert _paused("after_store") < 0.05
