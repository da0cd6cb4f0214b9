"""The profile worker's launcher: where each workload's inputs are drawn, and in which range.

CuPy is replaced by a stand-in that records nothing but synchronizations: what is tested here is
the launcher's own order of ranges and threads (tests/runner/profile/test_launcher_gpu.py runs
it on a GPU)."""

from __future__ import annotations

import sys
import threading
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from runner.profile.ncu_pass import INPUTS_RANGE, Launcher


class _Ranges:
    available = True

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.seen: list[str] = []

    def push(self, name: str) -> None:
        self.stack.append(name)
        self.seen.append(name)

    def pop(self) -> None:
        self.stack.pop()


class _Instance:
    def __init__(self, log: list[tuple[str, Any]], ranges: _Ranges, name: str) -> None:
        self.log, self.ranges, self.name = log, ranges, name

    def launch(self) -> None:
        self.log.append(("launch", self.name, tuple(self.ranges.stack)))

    def close(self) -> None:
        self.log.append(("close", self.name, ()))


class _Workload:
    """Draws its inputs where it is asked to (the suite protocol's `inputs` keyword)."""

    def __init__(self, name: str, log: list, ranges: _Ranges) -> None:
        self.name, self.log, self.ranges = name, log, ranges

    def prepare(self, seed: int, inputs: str = "host") -> _Instance:
        where = (inputs, threading.current_thread() is threading.main_thread())
        self.log.append(("prepare", self.name, (*where, tuple(self.ranges.stack))))
        return _Instance(self.log, self.ranges, self.name)


class _HostOnly(_Workload):
    """A suite whose prepare knows no `inputs`: drawn on the host, on a prefetch thread."""

    def prepare(self, seed: int) -> _Instance:  # type: ignore[override]
        return super().prepare(seed, "host")


@pytest.fixture
def cupy_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    device = SimpleNamespace(synchronize=lambda: None)
    cupy = ModuleType("cupy")
    cupy.cuda = SimpleNamespace(  # type: ignore[attr-defined]
        set_pinned_memory_allocator=lambda allocator: None, Device=lambda: device
    )
    cupy.get_default_memory_pool = lambda: SimpleNamespace(free_all_blocks=lambda: None)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", cupy)


def test_gpu_inputs_are_drawn_just_before_their_launch_inside_the_excluded_range(
    cupy_stand_in: None,
) -> None:
    log: list[tuple[str, Any]] = []
    ranges = _Ranges()
    workloads = [_Workload("a", log, ranges), _HostOnly("b", log, ranges),
                 _Workload("c", log, ranges)]  # fmt: skip
    launcher = Launcher(workloads, 0, ranges, "device")
    for index, w in enumerate(workloads):
        assert launcher(w, index) == {"nvtx": True}
    prepared = {name: where for kind, name, where in log if kind == "prepare"}
    # on the GPU: asked for device inputs, on the worker's thread, in the range ncu leaves out
    assert prepared["a"] == ("device", True, (INPUTS_RANGE,))
    assert prepared["c"] == ("device", True, (INPUTS_RANGE,))
    # on the host: ahead, on a thread of its own, outside every range
    assert prepared["b"] == ("host", False, ())
    launches = [(name, stack) for kind, name, stack in log if kind == "launch"]
    assert launches == [("a", ("kernelwatch#0",)), ("b", ("kernelwatch#1",)),
                        ("c", ("kernelwatch#2",))]  # fmt: skip
    order = [(kind, name) for kind, name, _ in log if kind != "close"]
    # a GPU workload's inputs come after the launch before it (nothing of it held meanwhile)
    assert order.index(("prepare", "c")) > order.index(("launch", "b"))
    assert ranges.stack == []


def test_host_inputs_are_drawn_ahead_on_threads(cupy_stand_in: None) -> None:
    log: list[tuple[str, Any]] = []
    ranges = _Ranges()
    workloads = [_Workload(name, log, ranges) for name in "abc"]
    launcher = Launcher(workloads, 0, ranges, "host")
    for index, w in enumerate(workloads):
        launcher(w, index)
    prepared = [where for kind, _, where in log if kind == "prepare"]
    assert prepared == [("host", False, ())] * 3
    assert INPUTS_RANGE not in ranges.seen
