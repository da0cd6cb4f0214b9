"""runner.worker.process: the check phase's judgement of one workload (generic_check), on NumPy
arrays, no GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from runner.worker.process import generic_check, normalize_check

PARAMS = np.array([1.0, 2.0, 3.0, 4.0])
MOMENTS = np.array([0.5, 0.25, 0.125, 0.0625])


class OptimizerStep:
    """A workload that updates two outputs in place, as an optimizer step updates its params
    and moments; `wrong` says how far off each output the launch writes it."""

    precision, tolerance = "fp32", 1e-6

    def __init__(self, wrong: dict[str, float]) -> None:
        self.wrong = wrong

    def prepare(self, seed: int) -> Any:
        wrong = self.wrong

        class Instance:
            def __init__(self) -> None:
                self.outputs = {"params": np.zeros(4), "moments": np.zeros(4)}

            def poison(self) -> None:
                for out in self.outputs.values():
                    out[:] = np.nan

            def launch(self) -> None:
                self.outputs["params"][:] = PARAMS + wrong.get("params", 0.0)
                self.outputs["moments"][:] = MOMENTS + wrong.get("moments", 0.0)

            def fetch(self) -> dict[str, Any]:
                return dict(self.outputs)

            def reference(self) -> dict[str, Any]:
                # params first, moments last: the order the workload's check gives them in
                return {"params": PARAMS.copy(), "moments": MOMENTS.copy()}

            def close(self) -> None:
                pass

        return Instance()


def test_a_workload_of_two_outputs_passes_only_when_both_are_right() -> None:
    """Both outputs right: the check passes (the failure below is the first output's)."""
    result = normalize_check(generic_check(OptimizerStep({}), seed=0))
    assert result["passed"] is True and result["error_norm"] == 0.0


def test_a_wrong_first_output_fails_the_workload_though_its_last_is_right() -> None:
    """Every output is judged, not only the last: wrong params with right moments still fail."""
    result = normalize_check(generic_check(OptimizerStep({"params": 1.0}), seed=0))
    assert result["passed"] is False
    # the error reported is the first output's, relative to its own norm
    assert result["error_norm"] == pytest.approx(2.0 / np.linalg.norm(PARAMS))


def test_a_first_output_left_unwritten_fails_the_workload() -> None:
    """A NaN left in the first output (the poison, never overwritten) is counted and fails."""
    result = normalize_check(generic_check(OptimizerStep({"params": np.nan}), seed=0))
    assert result["passed"] is False and result["unwritten"] == 4


def test_a_worker_started_without_a_context_makes_none_until_its_ids_come(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A waiting GPU worker with "context": false imports its frameworks and touches nothing
    of CUDA's (no context, no timers: those come with its ids); one with a context makes it."""
    import sys
    import types

    from runner.worker.process import warm_up

    made: list[int] = []
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        runtime=types.SimpleNamespace(free=lambda pointer: made.append(pointer))
    )
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    loaded: list[list[str]] = []
    monkeypatch.setattr("runner.worker.process.preload", lambda modules: loaded.append(modules))
    config = {"device": "cuda", "mode": "time", "preload": ["json"], "context": False}
    assert warm_up(config, None) is None  # its handler is made once its ids come
    assert made == [] and loaded == [["json"]]
    assert warm_up({**config, "mode": "check", "context": True}, None) is None
    assert made == [0]
