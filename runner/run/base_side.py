"""One side of an interleaved comparison: a commit checked out, built, listed and checked, its
records waiting for the timing processes that alternate with the other side's.

A confirmation job prepares both sides (runner.run.confirm); a run prepares only its base, for
the launches it doubts after its first pass (runner.run.paired).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from runner.host import environment
from runner.measure.phase import run_phase
from runner.run import report
from runner.suite.build import BuildOutcome, build_env, run_build
from runner.suite.checkout import CommitInfo
from runner.suite.load import Suite, load_suite


@dataclass
class Side:
    commit: CommitInfo
    suite: Suite
    env: dict[str, str]
    build: BuildOutcome
    environment: dict[str, Any]
    records: dict[str, report.WorkloadRecord]
    passing: list[str]


def prepare(
    tree: Path,
    commit: CommitInfo,
    build_dir: Path,
    cache: Path,
    wanted: list[dict[str, Any]],
    check_workers: Callable[[Suite], int],
    on_loaded: Callable[[Suite, dict[str, str]], None] | None = None,
) -> Side:
    """The side of `commit` (checked out in `tree`): built, its workloads among `wanted`
    ({"name", "params"}) listed and checked in `check_workers(suite)` processes. `on_loaded`
    hears its suite and environment before the build (to start its timing workers ahead)."""
    suite = load_suite(tree)
    env = build_env(build_dir, cache)
    if on_loaded is not None:
        on_loaded(suite, env)
    build = run_build(suite, build_dir, env)
    listing = run_phase(suite, "list", [], env=env)
    infos = (
        [w for w in listing.listing if {"name": w["name"], "params": w["params"]} in wanted]
        if build.status == "ok"
        else []
    )
    records = {w["id"]: report.WorkloadRecord(info=w) for w in infos}
    if records:
        checked = run_phase(
            suite,
            "check",
            list(records),
            env=env,
            processes=check_workers(suite),
            weights={w["id"]: float(w.get("bytes") or 0.0) for w in infos},
        )
        for wid, outcome in checked.outcomes.items():
            records[wid].check = outcome
    passing = [wid for wid, r in records.items() if r.passed]
    return Side(
        commit,
        suite,
        env,
        build,
        environment.collect(suite.device, listing.device),
        records,
        passing,
    )


def side_document(
    side: Side,
    *,
    repository: dict[str, Any],
    branch: str,
    runner: dict[str, Any] | None,
    started: datetime,
    log_tail: str,
    records: list[str] | None = None,
    job_id: int | None = None,
    lease_token: str | None = None,
) -> dict[str, Any]:
    """The side's run document (only `records`, by id, where given)."""
    chosen = [side.records[w] for w in records] if records is not None else side.records.values()
    environment.note_timings(side.environment, chosen)
    return report.document(
        run_id=str(uuid.uuid4()),
        suite=side.suite.name,
        repository=repository,
        branch=branch,
        commit=side.commit,
        runner=runner,
        environment=side.environment,
        build=side.build,
        records=list(chosen),
        started_at=started,
        job_id=job_id,
        lease_token=lease_token,
        log_tail=log_tail,
        work_changes=side.suite.work_changes,  # the suite's, as its own runs say it
    )
