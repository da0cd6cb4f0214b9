"""GitHub commit statuses: one per commit and suite, from the verdicts stored at ingest.

Posted only when `KERNELWATCH_GITHUB_TOKEN` is set and the repository is named like a GitHub
repository (`owner/name`, as the webhook registers it). The context is `kernelwatch/<suite>`;
the target URL is `<KERNELWATCH_PUBLIC_URL>/commits/<sha>` when the public URL is set.

The state of a commit and suite is decided over the newest run of each environment (GPU
fingerprint) at that commit, so a clean run on a second GPU cannot hide a regression on the first:

- ``failure``: a build failed, or a series regressed, or one broke (correctness failed; the
  workload failed, timed out or crashed; the build broke it), or (for a suite that declares
  `work_changes = "fail"`) a kernel's work counters grew. The code is to blame. A work change
  is otherwise a notice on the commit page, never a failure.
- ``error``: a run the runner reported as failed, with none of the above to blame it on: the
  measurement went wrong, not (as far as kernelwatch can tell) the code.
- ``success``: everything else, including a first run (every series new) and missing series.

The description counts the verdicts ("1 regressed, 2 improved, 37 unchanged") and names the
worst series ("gemm_fwd 1024³ gelu +7.8%"), cut to GitHub's 140 characters.

Talking to GitHub never fails an ingest: the status is posted after the result document is
stored and answered; a timeout, a connection error or a 5xx is retried a couple of times with a
short backoff; whatever still fails is logged with the status code. The token is sent only in
the Authorization header and is never logged.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from dataclasses import dataclass

import httpx
from sqlalchemy.orm import Session, sessionmaker

from dashboards.format import series_label
from dashboards.style import VERDICT_ORDER
from service.analysis.measures import said
from service.analysis.work import describe
from service.core.settings import Settings
from service.evaluation.verdicts.evaluate import BROKEN_STATES
from service.integrations.github import api
from service.models import Run
from service.store.reads import github_reads, queries

log = logging.getLogger(__name__)

MAX_DESCRIPTION = 140
# The verdicts' order everywhere (worst first: dashboards.style), "more work" beside the broken.
COUNT_ORDER = (*VERDICT_ORDER[:2], "more work", *VERDICT_ORDER[2:])

_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# Statuses of one commit and suite are read and posted one at a time (per process), so that a
# slower report of an earlier run cannot overwrite the report that already counts a later one.
_LOCKS = tuple(threading.Lock() for _ in range(64))


@dataclass(frozen=True)
class CommitStatus:
    repository: str
    sha: str
    state: str  # error | failure | pending | success
    description: str
    context: str
    target_url: str | None = None

    def payload(self) -> dict[str, str]:
        body = {"state": self.state, "description": self.description, "context": self.context}
        if self.target_url:
            body["target_url"] = self.target_url
        return body


def report_run(factory: sessionmaker[Session], settings: Settings, run_uuid: str) -> None:
    """Post the status of the commit and suite of a freshly stored run; never raises."""
    try:
        with factory() as session:
            found = queries.run_named(session, run_uuid)
        key = (found[2], found[1], found[0].suite) if found else None
        if key is None or not api.is_github_repository(key[0]) or not _SHA.match(key[1]):
            log.debug("run %s: not a GitHub repository commit; no status posted", run_uuid)
            return
        with _LOCKS[hash(tuple(key)) % len(_LOCKS)]:
            with factory() as session:
                status = commit_status(session, run_uuid, settings.public_url)
            if status is not None:
                post_status(settings, status)
    except Exception:
        log.exception("run %s: could not report a GitHub commit status", run_uuid)


def commit_status(session: Session, run_uuid: str, public_url: str | None) -> CommitStatus | None:
    """The status of the commit and suite of `run_uuid`, from what is stored now."""
    found = queries.run_named(session, run_uuid)
    if found is None:
        return None
    run, sha, repository = found
    runs = github_reads.newest_per_environment(session, run)
    state, description = summarize(session, runs)
    return CommitStatus(
        repository=repository,
        sha=sha,
        state=state,
        description=description,
        context=f"kernelwatch/{run.suite}",
        target_url=f"{public_url.rstrip('/')}/commits/{sha}" if public_url else None,
    )


def summarize(session: Session, runs: list[Run]) -> tuple[str, str]:
    """(state, description) over the given runs of one commit and suite."""
    ids = [r.id for r in runs]
    gpus = {r.id: r.gpu_name for r in runs}
    several = len(runs) > 1
    counts: Counter[str] = Counter()
    broken: dict[tuple[int, str, str], str] = {}
    worst: tuple[float, str] | None = None
    for verdict, series in github_reads.verdicts_with_series(session, ids):
        label = series_label(series.workload, series.params, series.kernel, compact=True)
        gpu = f" on {gpus[verdict.run_id]}" if several and gpus.get(verdict.run_id) else ""
        if verdict.verdict == "broken":
            reason = verdict.note.split(":", 1)[0].replace("_", " ") or "broken"
            broken.setdefault(
                (verdict.run_id, series.workload, series.params_key), f"{label}{gpu}: {reason}"
            )
            continue
        counts[verdict.verdict] += 1
        change = verdict.change
        if verdict.verdict != "regressed" or change is None:
            continue
        if worst is None or change > worst[0]:
            worst = (change, f"{label} {change * 100:+.1f}%{gpu}")
    for w in github_reads.workloads_in(session, ids, BROKEN_STATES):
        label = series_label(w.name, w.params, None, compact=True)
        if several and gpus.get(w.run_id):
            label += f" on {gpus[w.run_id]}"
        reason = w.status.replace("_", " ")
        broken.setdefault((w.run_id, w.name, w.params_key), f"{label}: {reason}")
    counts["broken"] = len(broken)
    more_work = _more_work(session, [r for r in runs if r.work_changes == "fail"])
    counts["more work"] = len(more_work)
    # Prepare time, peak memory, numeric error: said, a notice (their alerts are to come).
    measures = [
        f"{series_label(w.name, w.params, None, compact=True)}: "
        f"{said(v.measure, v.value, v.base_value, v.change, v.verdict)}"
        for v, w in github_reads.regressed_measures(session, ids)
    ]

    build_failed = any(r.status == "build_failed" for r in runs)
    parts = ["build failed"] if build_failed else []
    parts += [f"{counts[name]} {name}" for name in COUNT_ORDER if counts[name]]
    if build_failed or counts["regressed"] or counts["broken"] or counts["more work"]:
        state = "failure"
    elif any(r.status == "failed" for r in runs):
        state = "error"
        parts.insert(0, "the run failed")
    else:
        state = "success"
    if measures:
        parts.append(f"{len(measures)} measure{'s' if len(measures) > 1 else ''} regressed")
    text = ", ".join(parts) or "no results"
    named = worst[1] if worst else next(iter([*broken.values(), *more_work, *measures]), None)
    if named:
        text += f" ({named})"
    return state, cut(text)


def _more_work(session: Session, runs: list[Run]) -> list[str]:
    """For suites that opted in (work_changes = "fail"): the kernels whose work counters grew,
    each as "workload kernel: instructions +3.1%" (its most grown counter), most grown first."""
    if not runs:
        return []
    rows = github_reads.grown_work(session, [r.id for r in runs])
    grown = sorted(rows, key=lambda r: -(r[0].change if r[0].change is not None else 1e9))
    most: dict[tuple[int, str], str] = {}  # one line per kernel: its most grown counter
    for v, w in grown:
        named = series_label(w.name, w.params, v.kernel, compact=True)
        label = f"{named}: {describe(v.label or v.counter, v.change)}"
        most.setdefault((w.id, v.kernel), label)
    return list(most.values())


def cut(text: str, limit: int = MAX_DESCRIPTION) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def post_status(
    settings: Settings, status: CommitStatus, *, client: httpx.Client | None = None
) -> bool:
    """POST /repos/{owner}/{repo}/statuses/{sha}; True when GitHub took it."""
    url = f"{settings.github_api_url.rstrip('/')}/repos/{status.repository}/statuses/{status.sha}"
    where = f"status {status.repository}@{status.sha[:12]} {status.context}"
    answer = api.request(settings, "POST", url, status.payload(), what=where, client=client)
    if answer is None:
        log.error("GitHub %s: gave up after %d attempts", where, api.attempts())
        return False
    if answer.is_success:
        log.info("GitHub %s: %s (%s)", where, status.state, answer.status_code)
        return True
    hint = " (check KERNELWATCH_GITHUB_TOKEN: it needs commit-status write access)"
    log.error("GitHub %s: GitHub answered %d %s; status not posted%s", where, answer.status_code,
              api.redact(api.message(answer), api.token(settings)),
              hint if answer.status_code in (401, 403, 404) else "")  # fmt: skip
    return False
