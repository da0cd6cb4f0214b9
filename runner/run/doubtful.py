"""Launches in doubt after a run's first pass (their processes sat apart), timed again apart
from the rest of the suite: against the run's base, interleaved (runner.run.paired), where it
has one that measures them; else alone (runner.run.wandering)."""

from __future__ import annotations

from collections.abc import Callable

from runner.measure.phase import Outcome, WarmWorkers, run_phase
from runner.run import paired, report, wandering
from runner.run.base_side import Side
from runner.run.progress import Progress
from runner.suite.load import Suite


def time_wandering(suite: Suite, ordered: list[str], records: dict[str, report.WorkloadRecord],
                    short: list[str], seeds_used: int, env: dict[str, str], warm: WarmWorkers,
                    progress: Progress, log: Callable[[str], None],
                    check_stop: Callable[[], None],
                    base: paired.BaseCommit | None = None,
                    ) -> tuple[Side, list[str]] | None:  # fmt: skip
    """The launches whose processes sat apart (runner.run.wandering), timed again apart from the
    rest of the suite, the warm workers still waiting closed first: against the run's base,
    interleaved, where it has one that measures them (runner.run.paired); else alone, in
    wander_processes fresh processes of the head, with seeds that go on from those used. Where
    enough of those succeed, they are the launch's timing. The base's side and its timed ids,
    where the base timed any."""
    spread = wandering.wandering_launches((records[w] for w in ordered), short)
    if not spread:
        return None
    total = wandering.wander_processes(suite.timing.processes)
    apart = ", ".join(f"{wid} {sd:.1%}" for wid, sd in spread.items())
    warm.close()
    against = None
    if base is not None:
        against = time_against_base(suite, records, spread, total, seeds_used, env, base,
                                     progress, log, check_stop)  # fmt: skip
    timed_against = (against[0], list(against[1].values())) if against else None
    alone = {w: sd for w, sd in spread.items() if against is None or w not in against[1]}
    if not alone:
        return timed_against
    log(f"timing: {len(alone)} launches whose processes sat apart (sd {apart}) timed again in "
        f"{total} fresh processes of their own (${wandering.WANDER_PROCESSES_ENV})")  # fmt: skip
    again: dict[str, list[Outcome]] = {wid: [] for wid in alone}
    for r in range(total):
        check_stop()
        progress.stage(f"timing {r + 1}/{total} (processes apart)", len(alone))
        timed = run_phase(suite, "time", list(alone), env=env, seed=seeds_used + r,
                          on_done=lambda wid, o: progress.advance(wid, o))  # fmt: skip
        for wid in alone:
            again[wid].append(timed.outcomes[wid])
    for wid, outcomes in again.items():
        records[wid].timings = wandering.timed_apart(records[wid].timings, outcomes, alone[wid])
    return timed_against


def time_against_base(suite: Suite, records: dict[str, report.WorkloadRecord],
                       spread: dict[str, float], total: int, seeds_used: int,
                       env: dict[str, str], base: paired.BaseCommit, progress: Progress,
                       log: Callable[[str], None], check_stop: Callable[[], None],
                       ) -> tuple[Side, dict[str, str]] | None:  # fmt: skip
    """Doubtful launches timed interleaved with the base's build: (its side, head id -> base
    id of those it timed), or None where it timed none (the log says why)."""
    progress.stage(f"base {base.sha[:12]}: build and check")
    wanted = [{"name": records[w].info["name"], "params": records[w].info["params"]}
              for w in spread]  # fmt: skip
    side = base.prepare(wanted)
    pairs = paired.counterparts({w: records[w].info for w in spread}, side) if side else {}
    if side is None or not pairs:
        log(f"timing: no base to time the doubtful launches against "
            f"({base.reason or f'base {base.sha[:12]} measures none of them'})")  # fmt: skip
        return None
    count = max(paired.MIN_PAIRS, total // 2)  # as many processes as the head alone would have
    apart = ", ".join(f"{wid} {spread[wid]:.1%}" for wid in pairs)
    log(f"timing: {len(pairs)} launches whose processes sat apart (sd {apart}) timed "
        f"interleaved with base {base.sha[:12]}, {count} fresh processes of each, A B A B "
        f"(${paired.PAIR_ENV})")  # fmt: skip

    def on_process(r: int) -> None:
        check_stop()
        progress.stage(f"timing {r + 1}/{count} (against base {base.sha[:12]})", len(pairs))

    head, based = paired.interleave(suite, env, pairs, side, count, seeds_used, on_process)
    timed = {}
    for wid, bid in pairs.items():
        found = paired.paired_timing(records[wid].timings, head[wid], based[bid], spread[wid],
                                     base.sha)  # fmt: skip
        if found is not None:
            records[wid].timings = found[0]
            side.records[bid].timings = found[1]
            timed[wid] = bid
    return (side, timed) if timed else None
