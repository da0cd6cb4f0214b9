"""One run: checkout → build → correctness → ncu → timing (N processes) → timelines → document.

Timing: the suite's processes, then more for short launches (runner.run.timing_passes), then
fresh processes for the launches in doubt (runner.run.doubtful).

The correctness workers and the timing processes are started while the build runs
(runner.measure.phase.WarmWorkers, `warm_plan`): each waits, warmed up, for its phase.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.host import environment
from runner.host.checks import DEFAULT_CACHE, require_gpu
from runner.measure.phase import WarmWorkers, run_phase, warm_enabled
from runner.measure.preload import PRELOAD_ENV
from runner.run import doubtful, paired, report
from runner.run.base_side import Side, side_document
from runner.run.progress import Progress
from runner.run.timing_passes import short_processes, time_passes, timing_order
from runner.suite.build import build_env, run_build
from runner.suite.checkout import CheckoutError, Checkouts, _git
from runner.suite.load import Suite, SuiteError, load_suite

CHECK_PROCESSES = 3  # concurrent correctness workers on a GPU (each draws its inputs on the host)
CHECK_PROCESSES_ENV = "KERNELWATCH_CHECK_PROCESSES"


@dataclass
class RunRequest:
    source: str
    rev: str
    branch: str | None = None
    repository: str | None = None
    only: str | None = None
    job_id: int | None = None
    lease_token: str | None = None
    runner: dict[str, Any] | None = None
    cache_dir: Path = DEFAULT_CACHE
    stop: threading.Event = field(default_factory=threading.Event)
    # A pull request's job: {"number", "base_ref", "base_sha"} (the target branch's tip when
    # the PR was pushed); the document names the merge base with it.
    pull_request: dict[str, Any] | None = None
    # Whether `source` may be a local path: a person's own run may; a job from the service only
    # where the host allows it (runner.suite.checkout.local_clones_allowed).
    local_clones: bool = True


class JobInterrupted(Exception):
    """Raised by `execute` (and a confirmation) when it stopped early because its stop event was
    set: the agent releases the job, uncounted."""


def repository_name(source: str) -> str:
    """owner/name from a clone URL, or the folder's name for a local path."""
    cleaned = re.sub(r"\.git/?$", "", source.rstrip("/"))
    match = re.search(r"[:/]([\w.-]+)/([\w.-]+)$", cleaned)
    if match and ("://" in source or source.startswith("git@")):
        return f"{match.group(1)}/{match.group(2)}"
    return re.sub(r"[^\w.-]", "_", Path(cleaned).name) or "local"


def _branch_of(clone: Path, sha: str) -> str:
    out = _git("branch", "--format=%(refname:short)", "--contains", sha, cwd=clone).split()
    for preferred in ("main", "master"):
        if preferred in out:
            return preferred
    return out[0] if out else "detached"


def execute(request: RunRequest, progress: Progress | None = None) -> dict[str, Any]:
    progress = progress or Progress()
    lines: list[str] = []

    def log(line: str) -> None:
        stamped = f"[{datetime.now(UTC):%H:%M:%S}] {line}"
        lines.append(stamped)
        progress.log(stamped)

    def check_stop() -> None:
        if request.stop.is_set():
            raise JobInterrupted("stopped before the run finished")

    started = datetime.now(UTC)
    run_id = str(uuid.uuid4())
    checkouts = Checkouts(request.cache_dir, local=request.local_clones)
    progress.stage("checkout")
    worktree, commit = checkouts.worktree(request.source, request.rev, f"run-{run_id}")
    clone = checkouts.clone_for(request.source)
    base: paired.BaseCommit | None = None
    try:
        branch = request.branch or _branch_of(clone, commit.sha)
        log(f"checked out {commit.sha[:12]} ({branch}) in {worktree}")
        pull = pull_request_section(checkouts, clone, commit.sha, request.pull_request)
        if pull:
            log(f"pull request #{pull['number']}: merge base with {pull['base_ref']} is "
                f"{(pull['merge_base'] or 'unknown')[:12]}")  # fmt: skip
        suite = load_suite(worktree)
        base_sha = paired.base_revision(commit, pull) if paired.enabled() else None
        if base_sha is not None:  # checked out and built only if a launch is in doubt
            base = paired.BaseCommit(checkouts, request.source, base_sha, request.cache_dir,
                                     check_processes)  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="kw-build-") as build_dir:
            records, build, env, against = _measure(
                suite, Path(build_dir), request, progress, log, check_stop, commit.sha, base
            )
        repository = {
            "name": request.repository or repository_name(request.source),
            "url": request.source if "://" in request.source else None,
        }
        document = report.document(
            run_id=run_id,
            suite=suite.name,
            repository=repository,
            branch=branch,
            commit=commit,
            runner=request.runner,
            environment=env,
            build=build,
            records=records,
            started_at=started,
            job_id=request.job_id,
            lease_token=request.lease_token,
            work_changes=suite.work_changes,
            log_tail="\n".join(lines),
        )
        if pull:
            document["pull_request"] = pull
        if against is not None:
            side, ids = against
            document["paired_base"] = side_document(
                side, repository=repository, branch=branch, runner=request.runner,
                started=started, records=ids,
                log_tail=f"base of run {run_id}: its doubtful launches timed interleaved, A B A B",
            )  # fmt: skip
    finally:
        if base is not None:
            base.close()
        checkouts.remove(clone, worktree)
    return document


def _measure(
    suite: Suite,
    build_dir: Path,
    request: RunRequest,
    progress: Progress,
    log: Callable[[str], None],
    check_stop: Callable[[], None],
    commit: str,
    base: paired.BaseCommit | None = None,
):
    # The build folder of this run, and a folder kept between runs for what builds may reuse.
    env = build_env(build_dir, request.cache_dir)
    progress.stage("build")
    with WarmWorkers(suite, warm_plan(suite), env) as warm:  # they start while the build runs
        if warm.preload:
            log(f"check and timing processes started ahead import {', '.join(warm.preload)}"
                f" while they wait (${PRELOAD_ENV})")  # fmt: skip
        return _build_and_measure(suite, build_dir, request, progress, log, check_stop,
                                  commit, env, warm, base)  # fmt: skip


def _build_and_measure(suite: Suite, build_dir: Path, request: RunRequest, progress: Progress,
                       log: Callable[[str], None], check_stop: Callable[[], None], commit: str,
                       env: dict[str, str], warm: WarmWorkers,
                       base: paired.BaseCommit | None):  # fmt: skip
    def describe() -> tuple[Any, dict[str, Any]]:  # needs no build: runs beside it
        listing = run_phase(suite, "list", [], env=env)
        return listing, environment.collect(suite.device, listing.device)

    with ThreadPoolExecutor(max_workers=2) as pool:
        # The GPU's check (a child process with CuPy, ~1 s) runs beside the build too: a host
        # that cannot run the suite is told in one line (HostError) before anything is checked
        # or timed, and before a build that failed for want of that GPU is reported.
        ready = pool.submit(require_gpu, suite.name) if suite.device == "cuda" else None
        described = pool.submit(describe)
        build = run_build(suite, build_dir, env)
        if ready is not None:
            ready.result()
        log(f"build {build.status} in {build.seconds:.1f} s ({len(build.kernels)} kernels)")
        listing, environment_section = described.result()
    check_stop()
    if build.status != "ok":
        return [], build, environment_section, None
    infos = [w for w in listing.listing if suite.selects(w, request.only)]
    if request.only and not infos:  # a typo of a pattern: nothing would run, and say succeeded
        known = ", ".join(w["id"] for w in listing.listing[:5])
        more = f" and {len(listing.listing) - 5} more" if len(listing.listing) > 5 else ""
        raise SuiteError(f"--only {request.only!r} selects none of the suite's "
                         f"{len(listing.listing)} workloads ({known}{more})")  # fmt: skip
    records = {w["id"]: report.WorkloadRecord(info=w) for w in infos}
    ids = list(records)
    log(f"{len(ids)} of {len(listing.listing)} workloads selected")

    profiling = None
    if suite.device == "cuda" and ids:
        from runner.profile import capture as profile

        reuse = profile.reuse_for(
            request.cache_dir, suite.root, build_dir, commit, environment_section
        )
        profiling = profile.Profiling(suite, infos, env, reuse)  # warms up during correctness
    with profiling or contextlib.nullcontext():
        against = _check_time_and_profile(suite, infos, records, env, warm, profiling, progress,
                                          log, check_stop, base)  # fmt: skip
    environment.note_timings(environment_section, records.values())
    return list(records.values()), build, environment_section, against


def _check_time_and_profile(
    suite: Suite,
    infos: list[dict[str, Any]],
    records: dict[str, report.WorkloadRecord],
    env: dict[str, str],
    warm: WarmWorkers,
    profiling: Any,
    progress: Progress,
    log: Callable[[str], None],
    check_stop: Callable[[], None],
    base: paired.BaseCommit | None = None,
) -> tuple[Side, list[str]] | None:
    """Correctness, then the ncu pass (before timing: nothing else on the GPU either way, and
    its warm-up has passed during correctness), timing, and timelines, into `records`; the
    base's side and the ids of its records where doubtful launches were timed against it."""
    ids = list(records)
    progress.stage("correctness", len(ids))
    workers = check_processes(suite)
    checked = run_phase(
        suite,
        "check",
        ids,
        env=env,
        on_done=lambda wid, o: progress.advance(wid, o),
        processes=workers,
        weights={w["id"]: float(w.get("bytes") or 0.0) for w in infos},
        warm=warm,
    )
    for wid, outcome in checked.outcomes.items():
        records[wid].check = outcome
    passing = [wid for wid in ids if records[wid].passed]
    log(f"correctness: {len(passing)} of {len(ids)} passed ({workers} worker processes; "
        f"{checked.starting:.1f} s to their first workload, {checked.closing:.1f} s from their "
        f"last to their end)")  # fmt: skip
    if note := report.reference_note(checked.outcomes):
        log(f"correctness: {note}")
    check_stop()
    if profiling is not None and passing:
        profiling.capture([records[w] for w in passing], progress, log, check_stop)
    # A launch that changed since the last one profiled is timed against the base, in place of
    # the suite's processes and a short launch's more (runner.run.paired), where the run has one.
    relaunched = profiling.relaunched if profiling is not None and base is not None else {}
    changed = {w: what for w, what in relaunched.items() if w in passing}
    ordered = timing_order([w for w in passing if w not in changed],
                           {w["id"]: w for w in infos}, suite.timing.method)  # fmt: skip
    alone, total = time_passes(suite, ordered, records, env, warm, progress, log, check_stop)
    against = doubtful.time_wandering(suite, ordered, records, alone,
                                      max(total, suite.timing.processes), env, warm, progress,
                                      log, check_stop, base, changed)  # fmt: skip
    check_stop()
    if suite.device == "cuda" and passing:
        from runner.profile import capture as profile

        profile.capture_timelines(suite, [records[w] for w in passing], env, progress, log,
                                  check_stop)  # fmt: skip
    return against


def pull_request_section(
    checkouts: Checkouts, clone: Path, sha: str, pull: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The document's `pull_request`: the job's number and target branch, and the merge base of
    `sha` with the target's tip the job names (None where git cannot find one)."""
    if not pull:
        return None
    merge_base = None
    try:
        base = checkouts.resolve(clone, str(pull["base_sha"]))
        merge_base = _git("merge-base", sha, base, cwd=clone).strip() or None
    except (CheckoutError, KeyError):
        pass  # the service then has no merge base to compare with, and says so
    return {"number": int(pull["number"]), "base_ref": str(pull["base_ref"]),
            "merge_base": merge_base}  # fmt: skip


def check_processes(suite: Suite) -> int:
    """How many correctness workers run at once: $KERNELWATCH_CHECK_PROCESSES, else
    CHECK_PROCESSES on a GPU whose compute mode admits several processes (NVML, read-only) and 1
    on a GPU that admits one; CPU suites check in one process (their NumPy work has the cores)."""
    configured = os.environ.get(CHECK_PROCESSES_ENV, "").strip()
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            pass
    if suite.device != "cuda":
        return 1
    from runner.host import gpuinfo

    mode = gpuinfo.compute_mode()
    return CHECK_PROCESSES if mode in (None, gpuinfo.NVML_COMPUTEMODE_DEFAULT) else 1


def warm_plan(suite: Suite) -> list[tuple[str, int]]:
    """The workers a run starts ahead (runner.measure.phase.WarmWorkers), as (mode, seed): its
    correctness workers and its timing processes (the short launches' too, on a GPU); none
    with $KERNELWATCH_WARM_WORKERS=0 or on a GPU that admits one process at a time."""
    if not warm_enabled():
        return []
    if suite.device == "cuda":
        from runner.host import gpuinfo

        if gpuinfo.compute_mode() not in (None, gpuinfo.NVML_COMPUTEMODE_DEFAULT):
            return []
    timing = short_processes(suite) if suite.device == "cuda" else suite.timing.processes
    return [("check", 0)] * check_processes(suite) + [("time", p) for p in range(timing)]
