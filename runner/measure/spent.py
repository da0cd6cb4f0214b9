"""Where a timing process's seconds went: its workloads' `prepare`, the fresh placements of its
short launches (each a `prepare` again), warm-up (with the peak-memory launch), samples, and the
rest (starting, CUDA's context, closing). On an H100 a timing process of benchmarks/doubt_gpu.py's
four workloads took 8.5 s, of which the log named 2.6 s of `prepare` and the samples' GPU time was
~0.1 s (issue 47: measure where the seconds go before cutting them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PARTS = {"prepare": "prepare", "placements": "other placements", "warm_up": "warm-up",
         "samples": "samples"}  # fmt: skip
SAY_FROM = 1.0  # seconds of a process below which where they went is not worth a line


def spent(outcomes: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Per workload that said (its result's `seconds`): seconds by part."""
    out = {}
    for wid, outcome in outcomes.items():
        result = outcome.result if outcome.status == "ok" else None
        seconds = (result or {}).get("seconds")
        if isinstance(seconds, dict):
            out[wid] = {p: float(seconds.get(p, 0.0)) for p in PARTS}
    return out


def note(outcomes: Mapping[str, Any], wall: float, phase: Any = None) -> str:
    """ "8.5 s: prepare 2.6 s, other placements 1.6 s, warm-up 0.9 s, samples 0.6 s, the rest
    2.8 s (0.4 s to its first workload, 1.9 s from its last to its end); most in block[...]
    4.1 s", or "" where no workload said or the process took less than SAY_FROM seconds.
    `phase` (runner.measure.phase.Phase) tells its starting and closing seconds; without it
    the rest is "(starting, CUDA, closing)"."""
    by_workload = spent(outcomes)
    if not by_workload or wall < SAY_FROM:
        return ""
    totals = {p: sum(s[p] for s in by_workload.values()) for p in PARTS}
    rest = max(wall - sum(totals.values()), 0.0)
    parts = ", ".join(f"{PARTS[p]} {v:.1f} s" for p, v in totals.items() if v >= 0.05)
    heaviest = max(by_workload, key=lambda w: sum(by_workload[w].values()))
    most = sum(by_workload[heaviest].values())
    where = "starting, CUDA, closing"
    if phase is not None:
        where = (f"{phase.starting:.1f} s to its first workload, {phase.closing:.1f} s from its "
                 f"last to its end")  # fmt: skip
        if phase.exit_handlers or phase.ended:  # the worker said when its exit handlers ended
            where += (f": {phase.exit_handlers:.1f} s in its exit handlers, {phase.ended:.1f} s "
                      f"after them")  # fmt: skip
    return (f"{wall:.1f} s: {parts + ', ' if parts else ''}the rest {rest:.1f} s ({where}); "
            f"most in {heaviest} {most:.1f} s")  # fmt: skip
