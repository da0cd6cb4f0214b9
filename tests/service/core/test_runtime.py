"""The process tuning of service/core/runtime.py: once a serving process is up, what it holds
is frozen out of the cyclic collector's walks and young collections run every YOUNG_THRESHOLD
allocations instead of CPython's 700, the older generations' thresholds left as they were."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from service.core.runtime import YOUNG_THRESHOLD, tune_garbage_collector


@pytest.fixture
def collector_restored() -> Iterator[None]:
    # The test process's collector must not stay tuned for the tests that follow.
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("collector_restored")
def test_young_collections_come_less_often_and_older_ones_are_left_alone() -> None:
    _, middle, old = gc.get_threshold()
    tune_garbage_collector()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, middle, old)
    assert YOUNG_THRESHOLD > 700  # the point is to run fewer collections than CPython's default


@pytest.mark.usefixtures("collector_restored")
def test_what_the_process_holds_is_frozen_out_of_the_collectors_walks() -> None:
    gc.unfreeze()
    held = {"app": ["routes"]}  # a container, alive as the app's caches are once it is up
    assert any(held is o for o in gc.get_objects())  # tracked, so walked until frozen
    tune_garbage_collector()
    assert gc.get_freeze_count() > 0
    # A frozen object is in no generation a collection walks.
    assert not any(held is o for o in gc.get_objects())
