"""The suite's timing processes, and a short launch's more.

Timing: every selected workload that passed correctness is timed in the suite's [timing]
processes, one after the other. A short launch (one that every one of those processes sampled
on several placements in memory, runner.measure.sampling.placements: a GPU launch of at most
PLACEMENTS_MAX_US, not power-capped), whether CUDA events or CUPTI time it, is then timed in
more processes, up to $KERNELWATCH_SHORT_PROCESSES in all (default: SHORT_PROCESSES_FACTOR x
the suite's processes). Such a launch keeps an offset per process that no move inside the
process changes (new buffers, local memory, flush buffer, kernel modules loaded again): on the
H100, 60-400 us launches (gemm_fwd 1024^3, gemm_bwd 256^3, cuBLAS 1024^3) sat up to ~1.5% apart
from one process to the next, e.g. gemm_fwd gelu 1024^3 at 91.9-92.1 us in every one of 6
processes of one run and at 91.9-93.2 us in the next run's. The run's median over 3 processes
then moved by up to 1.2% between runs of the same commit; only more processes average it. The
extra processes time only those launches (~2.6 s a process on the H100 for the default suite);
each one is a further entry in the workload's timing.processes (the median stays the median of
all samples), its stop reason marked (SHORT_NOTE), and the log says how many were timed so.
With 6 processes, two pairs of runs of the same commit (benchmarks/runner_cost.py --runs 2) had
every workload of >= 50 us within 0.7%.

Long launches whose processes sat apart in those (a register-spilling SGEMM's by up to 5% on an
H200) are timed again, in fresh processes of their own: against the run's base, interleaved,
where it has one (runner.run.paired), else alone (runner.run.wandering).

In every timing process the CUPTI-timed workloads (declared for launches of a few us) come
first (timing_order). Timed after longer workloads, a ~4 us kernel took on an offset that lasted
for the whole process (1.0-1.7% sd between processes, the same in a second pass over the short
kernels; one 512 MiB buffer written and given back did the same), though each of its samples'
placements sat on fresh memory behind a filler of a random size; timed first, 0.4-0.6%, and no
offset shared by two passes, also when the longer workloads came between them
(docs/timing-studies.md, on the H100, 2026-11-26).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from runner.measure import compile_caches, compile_time, spent
from runner.measure.phase import Outcome, Phase, WarmWorkers, run_phase
from runner.run import report
from runner.run.progress import Progress
from runner.suite.load import Suite

SHORT_PROCESSES_FACTOR = 2  # short launches: timed in this many times the suite's processes
SHORT_PROCESSES_ENV = "KERNELWATCH_SHORT_PROCESSES"  # ... or in this many processes in all
SHORT_NOTE = "extra process for short launches ({total} in all)"
# CUPTI-timed launches keep a per-process offset too: on the H100 a ~3.9 us streaming kernel
# sat at 3.84 us in most processes and at 4.13-4.16 us in one of three now and then, which moved
# a run's median by 2.5% (benchmarks/history_gpu.py, 2026-11-25).
SHORT_METHODS = ("cuda_events", "cupti")


def time_passes(
    suite: Suite,
    ordered: list[str],
    records: dict[str, report.WorkloadRecord],
    env: dict[str, str],
    warm: WarmWorkers,
    progress: Progress,
    log: Callable[[str], None],
    check_stop: Callable[[], None],
) -> tuple[list[str], int]:
    """Time `ordered` in the suite's processes, then its short launches in more, into `records`;
    the short launches' ids and how many processes they had in all."""

    def time_process(ids: list[str], seed: int, name: str) -> Phase:
        """One timing process of `ids`; the log says where its seconds went (`name`: which)."""
        started = time.monotonic()
        timed = run_phase(suite, "time", ids, env=env, seed=seed, warm=warm,
                          on_done=lambda wid, o: progress.advance(wid, o))  # fmt: skip
        if went := spent.note(timed.outcomes, time.monotonic() - started, timed):
            log(f"timing {name}: {went}")
        if note := prepare_note(timed.outcomes):
            log(f"timing {name}: {note}")
        return timed

    for process in range(suite.timing.processes if ordered else 0):
        check_stop()
        progress.stage(f"timing {process + 1}/{suite.timing.processes}", len(ordered))
        timed = time_process(ordered, process, f"{process + 1}/{suite.timing.processes}")
        for wid in ordered:
            records[wid].timings.append(report.of_process(timed.outcomes[wid], "suite"))
    alone = short_launches(records[wid] for wid in ordered)
    total = short_processes(suite)
    if alone and total > suite.timing.processes:
        log(
            f"timing: {len(alone)} short launches (sampled on placements in every process) timed "
            f"in {total - suite.timing.processes} more processes, {total} in all "
            f"(${SHORT_PROCESSES_ENV})"
        )
    for process in range(suite.timing.processes, total if alone else 0):
        check_stop()
        progress.stage(f"timing {process + 1}/{total} (short)", len(alone))
        timed = time_process(alone, process, f"{process + 1}/{total} (short)")
        for wid in alone:
            records[wid].timings.append(report.of_process(mark_short(timed.outcomes[wid], total),
                                                          "short"))  # fmt: skip
    return alone, total


def timing_order(ids: list[str], infos: dict[str, dict[str, Any]], default: str) -> list[str]:
    """The order a timing process takes `ids` in: the CUPTI-timed ones first (by their declared
    `timing_method`, else the suite's `default`), then the rest, each in the suite's order."""
    first = [i for i in ids if (infos[i].get("timing_method") or default) == "cupti"]
    chosen = set(first)
    return first + [i for i in ids if i not in chosen]


def short_processes(suite: Suite) -> int:
    """How many timing processes a short launch gets in all: $KERNELWATCH_SHORT_PROCESSES,
    else SHORT_PROCESSES_FACTOR x the suite's [timing] processes; never fewer than those (a
    value at or below them adds none)."""
    configured = os.environ.get(SHORT_PROCESSES_ENV, "").strip()
    total = SHORT_PROCESSES_FACTOR * suite.timing.processes
    if configured.isdigit():
        total = int(configured)
    return max(total, suite.timing.processes)


def short_launches(records: Any) -> list[str]:
    """The workloads that every one of their timing processes sampled on several placements
    (runner.measure.sampling: a short GPU launch, not power-capped) with a timer of SHORT_METHODS,
    in the run's order."""
    out = []
    for record in records:
        results = [t.result for t in record.timings if t.status == "ok" and t.result]
        if results and all(
            int(r.get("placements", 1)) > 1 and r.get("method") in SHORT_METHODS for r in results
        ):
            out.append(record.info["id"])
    return out


def prepare_note(outcomes: dict[str, Outcome]) -> str:
    """How much of a timing process its workloads' `prepare` took (what compiles there: a torch
    extension's build, Triton's JIT and autotuning, Inductor), where that is a second or more,
    and whether each found its compiled code in the caches (always where one did not)."""
    took = {
        wid: float(o.result["prepare_seconds"])
        for wid, o in outcomes.items()
        if o.status == "ok" and o.result and "prepare_seconds" in o.result
    }
    caches = compile_caches.describe({wid: o.result.get("compile_caches") or {}
                                      for wid, o in outcomes.items() if o.result})  # fmt: skip
    caches = f"compile caches: {caches}" if caches else ""
    if sum(took.values()) < 1.0:
        return caches if " miss (" in caches else ""
    slowest = max(took, key=took.__getitem__)
    said = f"prepare took {sum(took.values()):.1f} s of it"
    said += f" (slowest {slowest} {took[slowest]:.1f} s"
    if compiled := compile_time.describe(outcomes[slowest].result.get("torch_compile") or {}):
        said += f", {compiled}"
    said += ")"
    return f"{said}; {caches}" if caches else said


def mark_short(outcome: Outcome, total: int) -> Outcome:
    """An extra process's outcome, its stop reason saying what the process was."""
    if outcome.status == "ok" and outcome.result:
        note = SHORT_NOTE.format(total=total)
        reason = outcome.result.get("stop_reason", "")
        outcome.result = {**outcome.result, "stop_reason": f"{note}: {reason}"}
    return outcome
