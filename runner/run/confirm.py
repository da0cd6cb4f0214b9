"""A confirmation job: base and head built side by side and timed interleaved, A B A B.

Both commits are measured by the same runner in the same session, alternating process by
process, so a drift of the machine hits both sides alike. The head's document carries the base's
as `paired_base`; the service judges its suspected alerts on these samples alone.
"""

from __future__ import annotations

import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.measure.phase import run_phase
from runner.run.base_side import Side, prepare, side_document
from runner.run.pipeline import (
    JobInterrupted,
    Progress,
    RunRequest,
    check_processes,
    repository_name,
)
from runner.suite.checkout import Checkouts


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
                sides[role] = prepare(
                    tree, commit, Path(tmp) / role, request.cache_dir, wanted, check_processes
                )
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
            repository = {
                "name": request.repository or repository_name(request.source),
                "url": request.source if "://" in request.source else None,
            }
            documents = {
                role: side_document(
                    side,
                    repository=repository,
                    branch=request.branch or "main",
                    runner=request.runner,
                    started=started,
                    log_tail=f"confirmation ({role}): interleaved with the other side, A B A B",
                    job_id=request.job_id if role == "head" else None,
                    lease_token=request.lease_token if role == "head" else None,
                )
                for role, side in sides.items()
            }
    finally:
        for tree in trees:
            checkouts.remove(clone, tree)
    head = documents["head"]
    head["paired_base"] = documents["base"]
    return head
