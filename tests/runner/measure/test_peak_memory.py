"""The peak device memory of one launch, from PyTorch's allocator (runner.measure.sampling.
peak_memory_of): read around the launch alone, and nothing where PyTorch has no GPU context
(the real allocator on a GPU: tests/runner/suite/test_example_suite_torch.py)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from runner.measure.sampling import peak_memory_of


class Allocator:
    """What torch.cuda says of its allocator, as a launch moves it."""

    def __init__(self, initialized: bool) -> None:
        self.initialized, self.held, self.peak, self.calls = initialized, 100, 100, []

    def is_initialized(self) -> bool:
        return self.initialized

    def reset_peak_memory_stats(self) -> None:
        self.calls.append("reset")
        self.peak = self.held

    def max_memory_allocated(self) -> int:
        return self.peak


def test_the_peak_is_that_of_the_launch_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = Allocator(initialized=True)
    cuda.peak = 10_000  # what an earlier launch, or the prepare, held: not this launch's
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda))
    order = []

    def launch() -> None:
        order.append("launch")
        cuda.peak = max(cuda.peak, cuda.held + 400)  # a temporary of 400 bytes

    assert peak_memory_of(launch, lambda: order.append("sync")) == 500
    assert order == ["sync", "launch", "sync"] and cuda.calls == ["reset"]


def test_no_peak_without_a_gpu_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=Allocator(initialized=False)))
    assert peak_memory_of(lambda: None, lambda: None) is None
    monkeypatch.delitem(sys.modules, "torch")
    assert peak_memory_of(lambda: None, lambda: None) is None
