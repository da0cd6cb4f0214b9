"""Doubtful launches timed against their base, interleaved (A B A B), within the run.

A launch whose timing processes sat apart after the run's first pass (runner.run.wandering) is
the one whose run median says least: its processes sit on levels, and which level a run's few
processes land on is luck. Timing the head alone in more processes narrows that luck; timing the
base commit's build in processes that alternate with the head's removes it, since a drift of the
machine or a level a process lands on hits both sides alike. That comparison is what a
confirmation job makes (runner.run.confirm) after the service has doubted the run, one push and
minutes later (issue 52: a README commit's runs cost 173 s, 46 of them in the confirmation that
settled it). So such a launch is timed here, in as many fresh process pairs as the head alone
would have had processes, against the base: the first parent on a branch, the merge base on a
pull request. The run's document carries the base's side as `paired_base`; the service judges
those series on the interleaved samples (service.evaluation.verdicts.confirmations) and queues
no further confirmation for them. Where there is no base to time (a root commit, a base whose
build or check fails, a launch the base lacks) the head is timed apart alone, as before.

A launch whose signature changed since the last one the runner profiled (its kernels' code, their
launch configuration or its inputs: runner.profile.capture's `relaunched`) is in doubt too, and
the most likely of all to have moved: such a change is what a service suspects and confirms in a
job of its own. On an H100 a graph break's run took 121 s and the confirmation job the service
then queued another 140 s (a build and check of each side, 18 s each, and six fresh timing
processes of 17 s), its alert confirmed 261 s after the push (benchmarks/doubt_gpu.py,
2026-12-07). So it is timed against the base here too, in place of its processes among the
suite's other workloads and the extra ones a short launch would have had alone (the ncu pass
tells the change before the first of those); where no base measures it, it is timed alone in
fresh processes of its own.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.measure import spent
from runner.measure.phase import Outcome, WarmWorkers, run_phase, warm_enabled
from runner.run import report
from runner.run.base_side import Side, prepare
from runner.suite.checkout import CheckoutError, Checkouts, CommitInfo
from runner.suite.load import Suite

PAIR_ENV = "KERNELWATCH_PAIR_BASE"  # 0: doubtful launches are timed apart on the head alone
PAIR_NOTE = (
    "timed interleaved with base {base} (A B A B) in {total} fresh processes of each side ({why})"
)
APART_WHY = (
    "its {first} processes among the suite's other workloads sat {spread:.1%} apart and are left "
    "out"
)
CHANGED_WHY = "its launch changed since the last one measured: {what}"
MIN_PAIRS = 2  # process pairs a launch needs on both sides before they are its timing


def enabled() -> bool:
    return os.environ.get(PAIR_ENV, "1").strip().lower() not in ("0", "no", "false", "off")


def base_revision(commit: CommitInfo, pull: dict[str, Any] | None) -> str | None:
    """The commit a run's doubtful launches are timed against: a pull request's merge base,
    else the head's first parent; None for a root commit (or a PR whose merge base is unknown)."""
    if pull is not None:
        return pull.get("merge_base") or None
    return commit.parents[0] if commit.parents else None


@dataclass
class BaseCommit:
    """The run's base: checked out, built and checked only once a launch is in doubt."""

    checkouts: Checkouts
    source: str
    sha: str
    cache_dir: Path
    check_workers: Callable[[Suite], int]
    _tree: Path | None = None
    _build: Any = None
    _clone: Path | None = None
    reason: str = field(default="")  # why it could not be timed, where it could not
    warm: WarmWorkers | None = None  # its timing workers, started ahead (`ahead`)

    def prepare(self, wanted: list[dict[str, Any]], seeds: list[int] | None = None) -> Side | None:
        """The base side, its workloads among `wanted`; None (and `reason`) where it cannot
        be checked out or built. Its timing workers for `seeds` start ahead (`warm`)."""

        def loaded(suite: Suite, env: dict[str, str]) -> None:
            self.warm = ahead(suite, seeds or [], env)

        try:
            self._clone = self.checkouts.clone_for(self.source)
            tree, commit = self.checkouts.worktree(
                self.source, self.sha, f"base-{uuid.uuid4().hex[:12]}"
            )
        except CheckoutError as exc:
            self.reason = f"base {self.sha[:12]} could not be checked out: {exc}"
            return None
        self._tree = tree
        self._build = tempfile.TemporaryDirectory(prefix="kw-base-")
        try:
            side = prepare(tree, commit, Path(self._build.name), self.cache_dir, wanted,
                           self.check_workers, loaded)  # fmt: skip
        except Exception as exc:  # a base that no longer loads is no reason to lose the run
            self.reason = f"base {self.sha[:12]} could not be prepared: {exc}"
            return None
        if side.build.status != "ok":
            self.reason = f"base {self.sha[:12]}'s build failed"
            return None
        return side

    def close(self) -> None:
        if self.warm is not None:
            self.warm.close()
            self.warm = None
        if self._tree is not None and self._clone is not None:
            self.checkouts.remove(self._clone, self._tree)
            self._tree = None
        if self._build is not None:
            with contextlib.suppress(OSError):
                self._build.cleanup()
            self._build = None


def ahead(suite: Suite, seeds: list[int], env: dict[str, str]) -> WarmWorkers | None:
    """Timing workers of `suite` for `seeds`, started now to import the suite's frameworks
    while the base builds and checks and the pairs before theirs are timed: a fresh process's
    `import torch` and the compiler's modules took seconds of each (runner.measure.preload).
    They wait with no CUDA context, nothing of the GPU's held beside the process at work
    (runner.run.wandering: a launch timed with warm workers beside it wandered where alone it
    did not), and both sides have theirs alike. None with $KERNELWATCH_WARM_WORKERS=0."""
    if not seeds or not warm_enabled():
        return None
    return WarmWorkers(suite, [("time", seed) for seed in seeds], env, context=False)


def counterparts(head_infos: dict[str, dict[str, Any]], base: Side) -> dict[str, str]:
    """Head workload id -> the base's id of the same workload (name and params) that passed
    its check there."""
    by_key = {
        (r.info["name"], repr(sorted(r.info["params"].items()))): wid
        for wid, r in base.records.items()
        if wid in base.passing
    }
    out = {}
    for wid, info in head_infos.items():
        found = by_key.get((info["name"], repr(sorted(info["params"].items()))))
        if found is not None:
            out[wid] = found
    return out


def interleave(
    head_suite: Suite,
    head_env: dict[str, str],
    pairs: dict[str, str],
    base: Side,
    total: int,
    first_seed: int,
    on_process: Callable[[int], None],
    log: Callable[[str], None] | None = None,
    warm: tuple[WarmWorkers | None, WarmWorkers | None] = (None, None),
) -> tuple[dict[str, list[Outcome]], dict[str, list[Outcome]]]:
    """`total` process pairs, base then head, each timing only the `pairs` (head id -> base
    id), with the same seed on both sides; the outcomes by head id and by base id. `warm`: the
    base's and the head's workers started `ahead`, where there are; `log` hears where each
    process's seconds went (runner.measure.spent)."""
    head: dict[str, list[Outcome]] = {wid: [] for wid in pairs}
    based: dict[str, list[Outcome]] = {bid: [] for bid in pairs.values()}
    for ready in warm:
        if ready is not None:
            ready.ready(head_suite.timing.timeout_seconds)
    for r in range(total):
        on_process(r)
        sides = (("base", base.suite, base.env, based, warm[0]),
                 ("head", head_suite, head_env, head, warm[1]))  # fmt: skip
        for side, suite, env, out, ready in sides:
            started = time.monotonic()
            timed = run_phase(suite, "time", list(out), env=env, seed=first_seed + r, warm=ready)
            for wid in out:
                out[wid].append(report.of_process(timed.outcomes[wid], "paired"))
            if log is not None and (
                went := spent.note(timed.outcomes, time.monotonic() - started, timed)
            ):
                log(f"timing {r + 1}/{total} against the base, {side}: {went}")
    return head, based


def paired_timing(
    head: list[Outcome], base: list[Outcome], why: str, sha: str
) -> tuple[list[Outcome], list[Outcome]] | None:
    """The head's and the base's timing of a doubtful launch: their interleaved processes, the
    head's stop reasons saying so and why it was in doubt (`why`: APART_WHY or CHANGED_WHY),
    where at least MIN_PAIRS succeeded on each side; None where they did not (the head's first
    processes then stay its timing)."""
    ok_head = [o for o in head if o.status == "ok" and o.result]
    ok_base = [o for o in base if o.status == "ok" and o.result]
    if len(ok_head) < MIN_PAIRS or len(ok_base) < MIN_PAIRS:
        return None
    note = PAIR_NOTE.format(base=sha[:12], total=len(head), why=why)
    for outcome in ok_head:
        assert outcome.result is not None
        reason = outcome.result.get("stop_reason", "")
        outcome.result = {**outcome.result, "stop_reason": f"{note}: {reason}"}
    return head, base
