"""What the agent does with a claimed job: one pipeline run at the job's commit, its stages in
the log and, on a terminal, as progress bars."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from pathlib import Path
from typing import Any

from runner.agent.loop import RunJob
from runner.measure.phase import Outcome
from runner.run.confirm import execute_confirmation
from runner.run.pipeline import Progress, RunRequest, execute

log = logging.getLogger("runner.job")


class LogProgress(Progress):
    """Stages and failures as log lines, each naming the job: an agent has no terminal to draw
    on. A stage's line says when it starts; the next one says how long the previous took."""

    def __init__(self, job_id: int | None = None, clock: Any = time.monotonic) -> None:
        self.job = f"job {job_id}" if job_id is not None else "job"
        self.clock = clock
        self.current: tuple[str, float] | None = None

    def stage(self, name: str, total: int | None = None) -> None:
        now = self.clock()
        took = ""
        if self.current is not None:
            took = f" ({self.current[0]} took {now - self.current[1]:.1f} s)"
        self.current = (name, now)
        log.info("%s: stage %s%s%s", self.job, name,
                 f" ({total} workloads)" if total else "", took)  # fmt: skip

    def finished(self) -> None:
        """The last stage's time, once the job's document is ready."""
        if self.current is not None:
            name, started = self.current
            log.info("%s: %s took %.1f s", self.job, name, self.clock() - started)
            self.current = None

    def advance(self, label: str, outcome: Outcome | None = None) -> None:
        if outcome is not None and outcome.status != "ok":
            log.warning("%s: %s: %s", self.job, label, outcome.status)

    def log(self, line: str) -> None:
        log.info("%s: %s", self.job, line)


class TeeProgress(Progress):
    """Every call to each of `parts`: the job's log lines, and bars where a person watches."""

    def __init__(self, *parts: Progress) -> None:
        self.parts = parts

    def stage(self, name: str, total: int | None = None) -> None:
        for part in self.parts:
            part.stage(name, total)

    def advance(self, label: str, outcome: Outcome | None = None) -> None:
        for part in self.parts:
            part.advance(label, outcome)

    def log(self, line: str) -> None:
        for part in self.parts:
            part.log(line)


def make_run_job(
    cache_dir: Path, only: str | None = None, console: Any = None, local_clones: bool = False
) -> RunJob:
    """The agent's `run_job`; with `console` (a rich Console on a terminal) each job's stages are
    drawn as progress bars too, below the log lines. `local_clones`: whether a job's clone URL
    may be a local path (runner.suite.checkout.local_clones_allowed)."""

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
            pull_request=(job.get("payload") or {}).get("pull_request"),
            local_clones=local_clones,
        )
        progress = LogProgress(job["id"])
        bars = None
        if console is not None and console.is_terminal:
            from runner.run.console import RichProgress

            bars = RichProgress(console)
        with bars or contextlib.nullcontext():
            shown = TeeProgress(progress, bars) if bars is not None else progress
            if kind in ("confirm", "bisect"):
                # A bisect job is a confirmation at one commit of the pushed range.
                payload = job["payload"]
                document = execute_confirmation(
                    request, payload["base_sha"], payload["workloads"], shown
                )
            else:
                document = execute(request, shown)
        progress.finished()
        return document

    return run_job
