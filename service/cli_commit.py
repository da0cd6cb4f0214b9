"""`kernelwatch commit SHA`: which kernels changed at a commit, by how much, why and in which
alert, told from the read that the commit page and GET /api/v1/commits/{sha}/metrics answer with
(service.evaluation.reads.commit_metrics), so the three never disagree."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pydantic import TypeAdapter, ValidationError

from dashboards.format import fmt_pct, series_label, short_sha
from dashboards.style import VERDICT_ORDER
from service.cli_admin import CliError, usable_engine
from service.core.db import session_factory
from service.core.errors import DomainError
from service.core.settings import Settings
from service.evaluation.reads.commit_metrics import as_json, commit_metrics_at
from service.schemas.names import GitBranch, RepositoryName

NAMES = {"--repo": TypeAdapter(RepositoryName), "--branch": TypeAdapter(GitBranch)}
# What the list of changed series leaves out: the rest is counted in the first line.
QUIET = ("unchanged", "new")
EXIT_REGRESSED = 3  # --fail-on-regression: a script tells it from an error (1) or a usage (2)


def show_commit(args: argparse.Namespace, settings: Settings) -> int:
    for flag, given in (("--repo", args.repo), ("--branch", args.branch)):
        if given is not None:  # the API's own rules for both names
            try:
                NAMES[flag].validate_python(given)
            except ValidationError as exc:
                why = exc.errors()[0]["msg"].removeprefix("Value error, ")
                raise CliError(f"{flag} {given[:100]!r}: {why}") from None
    engine = usable_engine(settings)
    try:
        with session_factory(engine)() as session:
            try:
                data = commit_metrics_at(session, args.sha, args.repo, args.branch, ncu="none")
            except DomainError as exc:
                raise CliError(exc.detail) from None
    finally:
        engine.dispose()
    if args.json:
        sys.stdout.buffer.write(as_json(data, indent=True) + b"\n")
        sys.stdout.flush()
    else:
        print("\n".join(told(data)))
    return EXIT_REGRESSED if args.fail_on_regression and regressed(data) else 0


def regressed(data: dict[str, Any]) -> bool:
    """Whether a regression was measured at the commit (whichever commit a bisection found it
    came in at: a push's head fails with its push) or found here by bisection."""
    measured = any(mp["verdict"] == "regressed" for _, mp in _changed(data["workloads"]))
    return measured or bool(data["found_here"])


def told(data: dict[str, Any]) -> list[str]:
    """The commit's story as lines: its verdict counts, each series that did not stay the same
    with its alert and the cause the alert names, and what bisections said of it: regressions
    found here, and regressions measured here that came in at an earlier commit."""
    commit = data["commit"]
    counts = data["verdict_counts"]
    parts = [f"{counts[v]} {v}" for v in VERDICT_ORDER if counts.get(v)]
    if data["found_here"]:
        parts.insert(0, f"{len(data['found_here'])} regressed (found here by bisection)")
    for first_bad, n in data["bisected"].items():
        parts.append(f"{n} regressed here came in at {short_sha(first_bad)} (bisected)")
    on = f" on {data['branch']}" if data.get("branch") else ""
    lines = [f"{commit['repository']} {short_sha(commit['sha'])}{on}: "
             f"{', '.join(parts) or 'no verdicts'}"]  # fmt: skip
    if data["analysis_pending"]:
        lines.append("  the analysis of its runs is still under way: verdicts may change")
    alerts = {a["id"]: a for a in data["alerts"]}
    by_series = {a["series"]["id"]: a for a in data["alerts"]}
    for found in data["found_here"]:
        label = series_label(found["workload"], found["params"], found["kernel"])
        lines.append(f"  {'regressed':<10} {label}  {fmt_pct(found['change'])}, found here by "
                     f"bisection (measured at {short_sha(found['head'])})")  # fmt: skip
        lines += _alert_line(alerts.get(found["alert_id"]))
    for label, mp in _changed(data["workloads"]):
        line = f"  {mp['verdict']:<10} {label}  {fmt_pct(mp['change'])}"
        if mp.get("bisected_to"):
            line += f", came in at {short_sha(mp['bisected_to'])} (bisected)"
        lines.append(line)
        lines += _alert_line(by_series.get(mp["series_id"]))
    for w in data["workloads"]:
        if w["status"] != "ok":
            label = series_label(w["workload"], w["params"], None)
            lines.append(f"  {'broken':<10} {label}  ({w['status'].replace('_', ' ')})")
    return lines


def _changed(workloads: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(label, metric) of each series whose verdict is not a quiet one, worst first."""
    changed = []
    for w in workloads:
        for k in w["kernels"]:
            for mp in k["metrics"]:
                if mp["verdict"] is None or mp["verdict"] in QUIET:
                    continue
                rank = VERDICT_ORDER.index(mp["verdict"]) \
                    if mp["verdict"] in VERDICT_ORDER else len(VERDICT_ORDER)  # fmt: skip
                changed.append((rank, series_label(w["workload"], w["params"], k["kernel"]), mp))
    return [(label, mp) for _, label, mp in sorted(changed, key=lambda c: c[:2])]


def _alert_line(alert: dict[str, Any] | None) -> list[str]:
    if alert is None:
        return []
    return [f"  {'':<10} alert {alert['id']} ({alert['state']}): {alert['summary']}"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = sub.add_parser(
        "commit", help="which kernels changed at a commit, by how much, why, and which alert"
    )
    cmd.add_argument("sha", help="a full or unique short sha")
    cmd.add_argument("--repo", help="owner/name, where a short sha is in several repositories")
    cmd.add_argument("--branch", help="the branch its runs were on (default: its newest run's)")
    cmd.add_argument("--json", action="store_true",
                     help="GET /api/v1/commits/{sha}/metrics?ncu=none's answer")  # fmt: skip
    cmd.add_argument("--fail-on-regression", action="store_true",
                     help=f"exit {EXIT_REGRESSED} where a regression was measured here or "
                          "found here by bisection")  # fmt: skip
    cmd.set_defaults(func=show_commit)
