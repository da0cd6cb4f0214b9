"""Where a prepare's seconds went inside torch.compile (runner.measure.compile_time), read from
Dynamo's own timings: a process's module stands in for torch._dynamo.utils, holding the same
dict of step -> durations that Dynamo appends to and that torch._dynamo.reset() empties."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from runner.measure import compile_time
from runner.measure.compile_time import Watch, describe, during_sampling


@pytest.fixture
def metrics(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[float]]:
    held: dict[str, list[float]] = {}
    utils = SimpleNamespace(compilation_time_metrics=held)
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", utils)
    monkeypatch.setitem(sys.modules, compile_time.COMPILER_MODULE, SimpleNamespace())  # imported
    return held


def compile_frame(
    metrics: dict[str, list[float]], total: float, tracing: float, backend: float
) -> None:
    for key, seconds in ((compile_time.FRAME, total), ("bytecode_tracing", tracing),
                         ("OutputGraph.call_user_compiler", backend)):  # fmt: skip
        metrics.setdefault(key, []).append(seconds)


def test_only_the_frames_compiled_since_the_watch_began_count(
    metrics: dict[str, list[float]],
) -> None:
    compile_frame(metrics, 9.0, 1.0, 7.0)  # before: another workload's
    watch = Watch()
    compile_frame(metrics, 3.0, 0.25, 2.5)
    compile_frame(metrics, 1.0, 0.25, 0.5)  # the frame after a graph break
    found = watch.result()
    assert found == {"frames": 2, "seconds": 4.0, "tracing": 0.5, "backend": 3.0}
    assert describe(found) == (
        "torch.compile 4.0 s of it (2 frames; Dynamo tracing 0.5 s, backend 3.0 s)"
    )


def test_a_dynamo_reset_inside_the_watch_loses_no_frame(metrics: dict[str, list[float]]) -> None:
    compile_frame(metrics, 9.0, 1.0, 7.0)
    compile_frame(metrics, 9.0, 1.0, 7.0)
    watch = Watch()
    metrics.clear()  # torch._dynamo.reset(): the lists start again
    compile_frame(metrics, 2.0, 0.5, 1.0)
    assert watch.result() == {"frames": 1, "seconds": 2.0, "tracing": 0.5, "backend": 1.0}


def test_nothing_compiled_nothing_said(
    metrics: dict[str, list[float]], monkeypatch: pytest.MonkeyPatch
) -> None:
    compile_frame(metrics, 9.0, 1.0, 7.0)
    assert Watch().result() == {}
    assert describe({}) == "" and during_sampling({}) == ""
    monkeypatch.delitem(sys.modules, "torch._dynamo.utils")  # torch never loaded
    assert Watch().result() == {}


def test_a_compile_while_sampling_is_said_unless_a_fresh_placement_made_it(
    metrics: dict[str, list[float]],
) -> None:
    sampling = Watch()
    placing = Watch()
    compile_frame(metrics, 0.5, 0.1, 0.3)  # a fresh placement's prepare, no sample
    sampling.set_apart(placing.result())
    assert sampling.result() == {}
    compile_frame(metrics, 0.75, 0.25, 0.5)  # a guard failed between samples
    recompiled = sampling.result()
    assert recompiled == {"frames": 1, "seconds": 0.75, "tracing": 0.25, "backend": 0.5}
    assert during_sampling(recompiled) == (
        "torch.compile compiled 1 frame(s) while sampling (0.75 s, a recompilation):"
        " those samples timed the compiler too"
    )


def test_a_prepare_that_imported_the_compiler_says_so(
    metrics: dict[str, list[float]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Importing Dynamo and Inductor is none of Dynamo's timed steps: said, not added."""
    monkeypatch.delitem(sys.modules, compile_time.COMPILER_MODULE)
    watch = Watch()
    monkeypatch.setitem(sys.modules, compile_time.COMPILER_MODULE, SimpleNamespace())
    compile_frame(metrics, 1.25, 0.25, 1.0)
    found = watch.result()
    assert found == {"frames": 1, "seconds": 1.25, "tracing": 0.25, "backend": 1.0,
                     "imported": True}  # fmt: skip
    assert describe(found) == (
        "torch.compile 1.2 s of it (1 frame; Dynamo tracing 0.2 s, backend 1.0 s;"
        " Dynamo and Inductor imported first, untimed)"
    )
