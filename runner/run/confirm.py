"""A confirmation job: base and head built side by side and timed interleaved, A B A B.

Both commits are measured by the same runner in the same session, alternating process by
process, so a drift of the machine hits both sides alike. The head's document carries the base's
as `paired_base`; the service judges its suspected alerts on these samples alone.
"""

from __future__ import annotations

import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.host import environment
from runner.measure.phase import run_phase
from runner.run import report
from runner.run.pipeline import (
    JobInterrupted,
    Progress,
    RunRequest,
    check_processes,
    repository_name,
)
from runner.suite.build import BuildOutcome, build_env, run_build
from runner.suite.checkout import Checkouts, CommitInfo
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


def _prepare(
    tree: Path, commit: CommitInfo, build_dir: Path, cache: Path, wanted: list[dict[str, Any]]
) -> Side:
    suite = load_suite(tree)
    env = build_env(build_dir, cache)
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
            processes=check_processes(suite),
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


def execute_confirmation(
    request: RunRequest,
    base_rev: str,
    wanted: list[dict[str, Any]],
    progress: Progress | None = None,
) -> dict[str, Any]:
    progress = progress or Progress()
    started = datetime.now(UTC)
    job = uuid.uuid4().hex[:12]
    checkouts = Checkouts(request.cache_dir, local=request.local_clones)
    clone = checkouts.clone_for(request.source)
    trees: list[Path] = []
    try:
        sides: dict[str, Side] = {}
        with tempfile.TemporaryDirectory(prefix="kw-confirm-") as tmp:
            for role, rev in (("base", base_rev), ("head", request.rev)):
                progress.stage(f"{role}: build and check")
                tree, commit = checkouts.worktree(request.source, rev, f"confirm-{role}-{job}")
                trees.append(tree)
                sides[role] = _prepare(tree, commit, Path(tmp) / role, request.cache_dir, wanted)
            processes = sides["head"].suite.timing.processes
            for process in range(processes):
                for role in ("base", "head"):  # A B A B: the interleaving is the point
                    if request.stop.is_set():
                        raise JobInterrupted("stopped during the confirmation")
                    side = sides[role]
                    progress.stage(f"timing {role} {process + 1}/{processes}", len(side.passing))
                    timed = run_phase(side.suite, "time", side.passing, env=side.env, seed=process)
                    for wid in side.passing:
                        side.records[wid].timings.append(timed.outcomes[wid])
            documents = {
                role: _document(request, side, started, role) for role, side in sides.items()
            }
    finally:
        for tree in trees:
            checkouts.remove(clone, tree)
    head = documents["head"]
    head["paired_base"] = documents["base"]
    return head


def _document(request: RunRequest, side: Side, started: datetime, role: str) -> dict[str, Any]:
    environment.note_timings(side.environment, side.records.values())
    return report.document(
        run_id=str(uuid.uuid4()),
        suite=side.suite.name,
        repository={
            "name": request.repository or repository_name(request.source),
            "url": request.source if "://" in request.source else None,
        },
        branch=request.branch or "main",
        commit=side.commit,
        runner=request.runner,
        environment=side.environment,
        build=side.build,
        records=list(side.records.values()),
        started_at=started,
        job_id=request.job_id if role == "head" else None,
        lease_token=request.lease_token if role == "head" else None,
        log_tail=f"confirmation ({role}): interleaved with the other side, A B A B",
    )
