"""Launches in doubt after a run's first pass, timed again apart from the rest of the suite:
those whose processes sat apart, and those whose launch changed since the last one the runner
profiled. Against the run's base, interleaved (runner.run.paired), where it has one that
measures them; else a wandering launch alone (runner.run.wandering), and a changed one keeps its
first processes (the service then confirms it in a job of its own, as before)."""

from __future__ import annotations

import contextlib
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
                    changed: dict[str, str] | None = None,
                    ) -> tuple[Side, list[str]] | None:  # fmt: skip
    """The launches in doubt, timed again apart from the rest of the suite, the warm workers
    still waiting closed first: those whose processes sat apart (runner.run.wandering) and,
    where the run has a base, those whose launch `changed` (id -> what changed); against the
    base, interleaved, where it measures them (runner.run.paired); else a wandering one alone,
    in wander_processes fresh processes of the head, with seeds that go on from those used.
    Where enough of those succeed, they are the launch's timing. The base's side and its timed
    ids, where the base timed any."""
    spread = wandering.wandering_launches((records[w] for w in ordered), short)
    # A change is doubt only a base can settle: without one its first processes stand.
    changed = {} if base is None else {w: c for w, c in (changed or {}).items() if w not in spread}
    if not spread and not changed:
        return None
    total = wandering.wander_processes(suite.timing.processes)
    apart = ", ".join(f"{wid} {sd:.1%}" for wid, sd in spread.items())
    warm.close()
    against = None
    if base is not None:
        against = time_against_base(suite, records, spread, total, seeds_used, env, base,
                                     progress, log, check_stop, changed)  # fmt: skip
    timed_against = (against[0], list(against[1].values())) if against else None
    alone = {w: sd for w, sd in spread.items() if against is None or w not in against[1]}
    # A changed launch was left out of the suite's processes for its pairs: with none, it is
    # timed here, alone, as a wandering one is.
    untimed = [w for w in changed if against is None or w not in against[1]]
    if untimed:
        log(
            f"timing: {len(untimed)} launches that changed since the last one measured timed in "
            f"{total} fresh processes of their own, with no base to time them against"
        )
        _alone(suite, untimed, total, seeds_used, env, progress, check_stop, records, "changed")
    if not alone:
        return timed_against
    log(f"timing: {len(alone)} launches whose processes sat apart (sd {apart}) timed again in "
        f"{total} fresh processes of their own (${wandering.WANDER_PROCESSES_ENV})")  # fmt: skip
    again = _alone(suite, list(alone), total, seeds_used, env, progress, check_stop)
    for wid, outcomes in again.items():
        records[wid].timings = wandering.timed_apart(records[wid].timings, outcomes, alone[wid])
    return timed_against


def _alone(suite: Suite, ids: list[str], total: int, seeds_used: int, env: dict[str, str],
           progress: Progress, check_stop: Callable[[], None],
           records: dict[str, report.WorkloadRecord] | None = None, what: str = "processes apart",
           ) -> dict[str, list[Outcome]]:  # fmt: skip
    """`ids` timed in `total` fresh processes of their own; their outcomes (and, given
    `records`, their timing)."""
    again: dict[str, list[Outcome]] = {wid: [] for wid in ids}
    for r in range(total):
        check_stop()
        progress.stage(f"timing {r + 1}/{total} ({what})", len(ids))
        timed = run_phase(suite, "time", ids, env=env, seed=seeds_used + r,
                          on_done=lambda wid, o: progress.advance(wid, o))  # fmt: skip
        for wid in ids:
            again[wid].append(report.of_process(timed.outcomes[wid], "alone"))
    if records is not None:
        for wid, outcomes in again.items():
            records[wid].timings = outcomes
    return again


def time_against_base(suite: Suite, records: dict[str, report.WorkloadRecord],
                       spread: dict[str, float], total: int, seeds_used: int,
                       env: dict[str, str], base: paired.BaseCommit, progress: Progress,
                       log: Callable[[str], None], check_stop: Callable[[], None],
                       changed: dict[str, str] | None = None,
                       ) -> tuple[Side, dict[str, str]] | None:  # fmt: skip
    """Doubtful launches (`spread`: id -> sd of its processes; `changed`: id -> what changed in
    its launch) timed interleaved with the base's build: (its side, head id -> base id of those
    it timed), or None where it timed none (the log says why)."""
    changed = changed or {}
    doubted = [*spread, *(w for w in changed if w not in spread)]
    count = max(paired.MIN_PAIRS, total // 2)  # as many processes as the head alone would have
    seeds = [seeds_used + r for r in range(count)]
    with contextlib.ExitStack() as stack:
        warm = paired.ahead(suite, seeds, env)  # importing while the base builds and checks
        if warm is not None:
            stack.enter_context(warm)
        progress.stage(f"base {base.sha[:12]}: build and check")
        wanted = [{"name": records[w].info["name"], "params": records[w].info["params"]}
                  for w in doubted]  # fmt: skip
        side = base.prepare(wanted, seeds)
        if base.warm is not None:  # the base's, never left waiting after its pairs
            stack.enter_context(base.warm)
        pairs = paired.counterparts({w: records[w].info for w in doubted}, side) if side else {}
        if side is None or not pairs:
            log(f"timing: no base to time the doubtful launches against "
                f"({base.reason or f'base {base.sha[:12]} measures none of them'})")  # fmt: skip
            return None
        return _pairs(suite, records, spread, changed, env, base, side, pairs, seeds, progress,
                      log, check_stop, (base.warm, warm))  # fmt: skip


def _pairs(suite: Suite, records: dict[str, report.WorkloadRecord], spread: dict[str, float],
           changed: dict[str, str], env: dict[str, str], base: paired.BaseCommit, side: Side,
           pairs: dict[str, str], seeds: list[int], progress: Progress,
           log: Callable[[str], None], check_stop: Callable[[], None],
           warm: tuple[WarmWorkers | None, WarmWorkers | None],
           ) -> tuple[Side, dict[str, str]] | None:  # fmt: skip
    count = len(seeds)
    apart = [f"{w} {spread[w]:.1%}" for w in pairs if w in spread]
    moved = [f"{w}: {changed[w]}" for w in pairs if w not in spread]
    whose = [f"processes sat apart (sd {', '.join(apart)})"] if apart else []
    if moved:
        whose.append(f"launch changed since the last one measured ({'; '.join(moved)})")
    log(f"timing: {len(pairs)} launches whose {' or whose '.join(whose)} timed interleaved with "
        f"base {base.sha[:12]}, {count} fresh processes of each, A B A B "
        f"(${paired.PAIR_ENV})")  # fmt: skip

    def on_process(r: int) -> None:
        check_stop()
        progress.stage(f"timing {r + 1}/{count} (against base {base.sha[:12]})", len(pairs))

    head, based = paired.interleave(suite, env, pairs, side, count, seeds[0], on_process, log,
                                    warm)  # fmt: skip
    timed = {}
    for wid, bid in pairs.items():
        first = len(records[wid].timings)
        why = (paired.APART_WHY.format(first=first, spread=spread[wid]) if wid in spread
               else paired.CHANGED_WHY.format(what=changed[wid]))  # fmt: skip
        found = paired.paired_timing(head[wid], based[bid], why, base.sha)
        if found is not None:
            records[wid].timings = found[0]
            side.records[bid].timings = found[1]
            timed[wid] = bid
    return (side, timed) if timed else None
