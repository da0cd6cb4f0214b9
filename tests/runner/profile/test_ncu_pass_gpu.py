"""The profile worker's launcher on a real GPU: what it leaves reachable by ncu's replays."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from runner.profile.ncu_pass import INPUTS_RANGE, Launcher

pytestmark = pytest.mark.gpu


class _Ranges:
    available = True

    def __init__(self) -> None:
        self.names: list[str] = []

    def push(self, name: str) -> None:
        self.names.append(name)

    def pop(self) -> None:
        pass


class _Upload:
    """A workload whose inputs are drawn on the host and uploaded, as the suite's are."""

    def prepare(self, seed: int) -> Any:
        import cupy

        host = np.random.default_rng(seed).standard_normal(1 << 22, dtype=np.float32)
        return _Instance(cupy.asarray(host))


class _Instance:
    def __init__(self, x: Any) -> None:
        self.x = x

    def launch(self) -> None:
        self.x *= 2

    def close(self) -> None:
        self.x = None


@pytest.fixture
def pinned_pool() -> Iterator[Any]:
    cupy = pytest.importorskip("cupy")
    pool = cupy.get_default_pinned_memory_pool()
    pool.free_all_blocks()
    yield pool
    cupy.cuda.set_pinned_memory_allocator(pool.malloc)  # CuPy's default, for the tests after


def test_uploads_leave_no_pinned_memory_behind(pinned_pool: Any) -> None:
    # Pinned host memory is reachable by kernels: ncu saves and restores all of it around every
    # profiled launch, so what a pool kept of earlier uploads slowed every later launch.
    ranges = _Ranges()
    launcher = Launcher([_Upload(), _Upload(), _Upload()], 0, ranges)
    for index in range(3):
        assert launcher(None, index) == {"nvtx": True}
    # Each prepare runs inside the range the pass leaves out, some ahead on a thread (their
    # order among the launches' ranges is the threads'); each launch in a range of its own.
    launches = [name for name in ranges.names if name != INPUTS_RANGE]
    assert launches == ["kernelwatch#0", "kernelwatch#1", "kernelwatch#2"]
    assert ranges.names.count(INPUTS_RANGE) == 3
    assert pinned_pool.n_free_blocks() == 0
