"""One comment on a pull request, kept up to date: after each analysed run of the PR's head,
kernelwatch writes (or rewrites in place) a short table of the series that regressed or improved
against the merge base, with a link to the head's page. Never raises: GitHub being away costs
the PR its comment, not the ingest."""

from __future__ import annotations

import logging

import httpx
from sqlalchemy.orm import Session, sessionmaker

from dashboards.format import series_label
from service.core.settings import Settings
from service.integrations.github import api
from service.models import Run
from service.models.pull_request import pull_branch
from service.store.reads import github_reads

log = logging.getLogger(__name__)

MAX_ROWS = 10
MARK = "<!-- kernelwatch -->"  # says which comment is ours, for a person reading the thread
SHOWN = ("regressed", "broken", "improved")


def comment_body(session: Session, run: Run, public_url: str | None) -> str:
    """Markdown: the verdict counts of the PR head's run, its most changed series, a link."""
    head = github_reads.commit_of(session, run)
    assert head is not None
    rows = github_reads.verdicts_with_series(session, [run.id])
    counts: dict[str, int] = {}
    for verdict, _ in rows:
        counts[verdict.verdict] = counts.get(verdict.verdict, 0) + 1
    changed = sorted(
        ((v, s) for v, s in rows if v.verdict in SHOWN),
        key=lambda vs: (SHOWN.index(vs[0].verdict), -abs(vs[0].change or 0.0)),
    )
    base = (run.merge_base_sha or "unknown")[:12]
    lines = [
        MARK,
        f"**kernelwatch** · `{run.suite}` at {head.sha[:12]} against the merge base {base} "
        f"on `{run.base_ref}` ({run.gpu_name})",
        "",
        ", ".join(f"{n} {name}" for name, n in sorted(counts.items())) or "no series measured",
    ]
    if changed:
        lines += ["", "| series | change | verdict |", "| --- | --- | --- |"]
        for v, s in changed[:MAX_ROWS]:
            change = f"{v.change:+.1%}" if v.change is not None else "–"
            label = series_label(s.workload, s.params, s.kernel, compact=True).replace("|", "\\|")
            lines.append(f"| {label} | {change} | {v.verdict} |")
        if len(changed) > MAX_ROWS:
            lines.append(f"| … and {len(changed) - MAX_ROWS} more | | |")
    if public_url:
        branch = pull_branch(run.pull_request or 0)
        url = f"{public_url.rstrip('/')}/commits/{head.sha}?branch={branch}"
        lines += ["", f"[every series and its ncu attribution]({url})"]
    return "\n".join(lines)


def report_pull_request(
    factory: sessionmaker[Session],
    settings: Settings,
    run_uuid: str,
    *,
    client: httpx.Client | None = None,
) -> None:
    """Write or update the PR's comment for an analysed run of its head; never raises."""
    try:
        with factory() as session:
            row = github_reads.pull_request_run(session, run_uuid)
            if row is None or not api.is_github_repository(row[1]):
                return
            run, repository, pr, head = row
            if head is None or head.sha != pr.head_sha:
                return  # an older push's run: the comment speaks for the newest head
            body = comment_body(session, run, settings.public_url)
            comment_id = pr.comment_id
        new_id = _write(settings, repository, pr.number, comment_id, body, client)
        if new_id is not None and new_id != comment_id:
            with factory() as session, session.begin():
                github_reads.set_comment_id(session, pr.id, new_id)
    except Exception:
        log.exception("run %s: could not write the pull request comment", run_uuid)


def _write(
    settings: Settings,
    repository: str,
    number: int,
    comment_id: int | None,
    body: str,
    client: httpx.Client | None,
) -> int | None:
    """PATCH the comment in place, or POST a new one (also when the old one was deleted)."""
    api = settings.github_api_url.rstrip("/")
    if comment_id is not None:
        answer = _send(settings, "PATCH", f"{api}/repos/{repository}/issues/comments/{comment_id}",
                       body, client)  # fmt: skip
        if answer is not None and answer.status_code != 404:
            return comment_id if answer.is_success else None
    answer = _send(settings, "POST", f"{api}/repos/{repository}/issues/{number}/comments",
                   body, client)  # fmt: skip
    if answer is not None and answer.is_success:
        return int(answer.json()["id"])
    return None


def _send(
    settings: Settings, method: str, url: str, body: str, client: httpx.Client | None
) -> httpx.Response | None:
    """One request (github_request's retries); the last answer, or None."""
    answer = api.request(settings, method, url, {"body": body}, what=f"comment {method} {url}",
                            client=client)  # fmt: skip
    if answer is not None and not answer.is_success and answer.status_code != 404:
        log.error("GitHub comment %s %s: %d %s", method, url, answer.status_code,
                  api.redact(api.message(answer), api.token(settings)))  # fmt: skip
    return answer
