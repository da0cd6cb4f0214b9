"""What the agent does with a claimed job: one pipeline run at the job's commit."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from runner.agent import RunJob
from runner.confirm import execute_confirmation
from runner.measure import Outcome
from runner.pipeline import Progress, RunRequest, execute

log = logging.getLogger("runner.job")


class LogProgress(Progress):
    """Stages and failures as log lines: an agent has no terminal to draw on."""

    def stage(self, name: str, total: int | None = None) -> None:
        log.info("stage %s%s", name, f" ({total} workloads)" if total else "")

    def advance(self, label: str, outcome: Outcome | None = None) -> None:
        if outcome is not None and outcome.status != "ok":
            log.warning("%s: %s", label, outcome.status)

    def log(self, line: str) -> None:
        log.info("%s", line)


def make_run_job(cache_dir: Path, only: str | None = None) -> RunJob:
    def run_job(claim: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        job = claim["job"]
        kind = job.get("kind", "run")
        if kind not in ("run", "confirm", "bisect"):
            raise RuntimeError(f"this runner cannot do jobs of kind {kind!r}")
        source = claim.get("clone_url")
        if not source:
            raise RuntimeError(f"repository {job['repository']} has no clone URL to fetch from")
        request = RunRequest(
            source=source,
            rev=job["commit"],
            branch=job["branch"],
            repository=job["repository"],
            only=only,
            job_id=job["id"],
            lease_token=claim["attempt_token"],
            cache_dir=cache_dir,
            stop=stop,
        )
        if kind in ("confirm", "bisect"):
            # A bisect job is a confirmation at one commit of the pushed range.
            payload = job["payload"]
            return execute_confirmation(
                request, payload["base_sha"], payload["workloads"], LogProgress()
            )
        return execute(request, LogProgress())

    return run_job
