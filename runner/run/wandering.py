"""Launches whose timing processes sit apart: timed again, apart from the rest of the suite.

A long launch is timed on one placement per process and most sit within 0.1-0.3% from one process
to the next. Some do not: on an H200 a register-spilling 4.2 ms SGEMM (benchmarks/history_gpu.py,
its `spill` workload) took 4,172-4,499 us in the processes of runs of one build and 4,795-5,147
us in those of the next, each process's samples within 0.5%, while 12 processes of an instrument
that loaded both builds agreed within 0.3% (+12.7% between them). What moved it was the process's
own history: timed alone in a fresh process, with no warm worker waiting beside it, the same
launch sat within 0.3% in every process of three runs of each build, and the change between them
came out at +12.5% (`kernelwatch-runner run --only '^spill'` with KERNELWATCH_WARM_WORKERS=0 on
the H200, 2026-11-28); timed in the suite's processes, among the other workloads, its first
processes sat 1.3-4.5% apart again, and the processes that then timed it alone agreed within
0.3%. With this rule on (a launch timed again beyond 1% sd), four runs of the two builds timed
it apart at 4,390 / 4,392 us and 4,968 / 4,965 / 4,965 us (+13.1%), but one run's three
processes sat 0.9% apart and all 3% low (4,211-4,280 us) and kept that median: WANDER_SPREAD is
half a percent (a steady 653 us tiled SGEMM's processes sit 0.1-0.2% apart).

So a GPU launch whose processes sat more than WANDER_SPREAD apart is timed again: the warm
workers still waiting are closed, and wander_processes fresh processes time only such launches.
Where at least MIN_APART of them succeed, they are the launch's timing, and the processes that
timed it among the suite's other workloads are left out (the stop reason says how far apart
they sat); otherwise all are kept. Short launches (runner.run.timing_passes.short_launches)
have extra processes of their own and are left to them; host-timed ones (CPU suites) are not
timed again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from runner.measure.phase import Outcome

WANDER_SPREAD = 0.005  # sd of the log process medians beyond which a launch is timed again
WANDER_PROCESSES_FACTOR = 2
MIN_APART = 2  # processes of its own a launch needs before they alone are its timing
WANDER_PROCESSES_ENV = "KERNELWATCH_WANDER_PROCESSES"  # ... or this many processes in all
GPU_METHODS = ("cuda_events", "cupti")
WANDER_NOTE = (
    "timed apart from the suite's other workloads in a fresh process, {total} in all (its "
    "{first} processes among them sat {spread:.1%} apart and are left out)"
)


def wander_processes(processes: int) -> int:
    """How many fresh processes time a wandering launch apart: $KERNELWATCH_WANDER_PROCESSES,
    else WANDER_PROCESSES_FACTOR x the suite's `processes`; never fewer than those."""
    configured = os.environ.get(WANDER_PROCESSES_ENV, "").strip()
    total = int(configured) if configured.isdigit() else WANDER_PROCESSES_FACTOR * processes
    return max(total, processes)


def process_spread(timings: Iterable[Outcome]) -> float | None:
    """The standard deviation of the log medians of a launch's processes that timed it; None
    with fewer than two."""
    medians = [
        float(np.median(t.result["samples"]))
        for t in timings
        if t.status == "ok" and t.result and t.result.get("samples")
    ]
    medians = [m for m in medians if m > 0]
    if len(medians) < 2:
        return None
    return float(np.std(np.log(medians), ddof=1))


def wandering_launches(records: Iterable[Any], short: Iterable[str]) -> dict[str, float]:
    """The GPU-timed workloads (id -> spread) whose processes sat more than WANDER_SPREAD apart,
    in the run's order, short launches (`short`) left out. Host-timed ones (CPU suites) are
    not: what moves them between processes is the host, and more processes of it cost as much
    as the first."""
    skip = set(short)
    out = {}
    for record in records:
        wid = record.info["id"]
        timed = [t for t in record.timings if t.status == "ok" and t.result]
        on_gpu = bool(timed) and all(t.result.get("method") in GPU_METHODS for t in timed)
        spread = process_spread(record.timings)
        if wid not in skip and on_gpu and spread is not None and spread > WANDER_SPREAD:
            out[wid] = spread
    return out


def timed_apart(first: list[Outcome], again: list[Outcome], spread: float) -> list[Outcome]:
    """A wandering launch's timing: the processes that timed it apart (`again`), each one's stop
    reason saying so, where at least MIN_APART succeeded; else every process."""
    ok = [o for o in again if o.status == "ok" and o.result]
    if len(ok) < MIN_APART:
        return [*first, *again]
    note = WANDER_NOTE.format(total=len(again), first=len(first), spread=spread)
    for outcome in ok:
        assert outcome.result is not None
        reason = outcome.result.get("stop_reason", "")
        outcome.result = {**outcome.result, "stop_reason": f"{note}: {reason}"}
    return again
