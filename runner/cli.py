"""`kernelwatch-runner`: the runner's command line.

Each subcommand is one `_add_<name>(subparsers)` function that registers its arguments and sets
`handler` to a function taking the parsed arguments and returning the exit code; `run`, `agent`
and `list` join `parse-ncu` the same way. Exit codes: 0 success, 2 usage or input errors; the
agent's own are in runner/agent/exits.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

from runner.profile import ncu

PROG = "kernelwatch-runner"
CPU_ENV = "KERNELWATCH_RUNNER_CPU"  # --cpu of `agent` and `doctor`, for a unit's EnvironmentFile


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="kernelwatch GPU runner: build, check, time and profile kernels."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(subparsers)
    _add_agent(subparsers)
    _add_list(subparsers)
    _add_doctor(subparsers)
    _add_parse_ncu(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except BrokenPipeError:
        # The reader went away (`kernelwatch-runner list --json | head`): nothing more to say.
        # Python would complain again flushing stdout at exit, so point it at /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command a closed pipe stopped


def _tell_unhealthy(server: str, token: str, reason: str) -> str:
    """Best effort: the service marks the runner unhealthy (shown on its overview page) until
    the agent registers again; a line saying whether it was told."""
    try:
        from runner.agent.client import ServiceClient, ServiceError
    except ImportError as exc:  # httpx missing: one of the failed checks already says so
        return f"the service was not told ({exc})"
    client = ServiceClient(server, token, timeout=5)
    try:
        client.report_unhealthy(reason)
    except ServiceError as exc:
        return f"the service was not told ({exc})"
    finally:
        client.close()
    return "the service shows this runner as unhealthy until an agent starts on a healthy host"


def _fail(command: str, message: str, code: int = 2) -> int:
    print(f"{PROG} {command}: error: {message}", file=sys.stderr)
    return code


def _env_on(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _add_run(subparsers: argparse._SubParsersAction) -> None:
    sub = subparsers.add_parser(
        "run",
        help="build, check, time and profile one commit (no service needed)",
        description="Run the suite declared in kernelwatch.toml at one commit and write the "
        "result document (JSON) to --out, or to stdout; progress and a summary table go to "
        "stderr.",
    )
    sub.add_argument("--repo", required=True, help="a local repository path or a clone URL")
    sub.add_argument("--commit", required=True, help="a sha, branch or tag")
    sub.add_argument("--branch", help="the branch to file the results under (default: guessed)")
    sub.add_argument("--repository-name", help="owner/name in the service (default: from --repo)")
    sub.add_argument("--out", type=Path, help="where to write the result document")
    sub.add_argument("--only", help="regular expression over workload ids")
    sub.add_argument("--cache", type=Path, help="clones and worktrees (~/.cache/kernelwatch)")
    sub.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from runner.host.checks import HostError
    from runner.run.console import RichProgress, summary_table
    from runner.run.pipeline import DEFAULT_CACHE, RunRequest, execute
    from runner.suite.checkout import CheckoutError
    from runner.suite.load import SuiteError

    if args.only:
        try:
            re.compile(args.only)
        except re.error as exc:
            return _fail("run", f"--only is not a regular expression: {exc}")
    if args.out is not None and (args.out.is_dir() or not args.out.parent.is_dir()):
        why = "is a folder: name the file" if args.out.is_dir() else "is in no folder that exists"
        return _fail("run", f"--out {args.out} {why} to write the result document to")
    source = args.repo if _is_url(args.repo) else str(Path(args.repo).resolve())
    request = RunRequest(
        source=source,
        rev=args.commit,
        branch=args.branch,
        repository=args.repository_name,
        only=args.only,
        cache_dir=args.cache or DEFAULT_CACHE,
    )
    console = Console(stderr=True)
    try:
        with RichProgress(console) as progress:
            document = execute(request, progress)
    except (CheckoutError, SuiteError, HostError) as exc:
        return _fail("run", str(exc))
    text = json.dumps(document, indent=2)
    if args.out:
        try:
            args.out.write_text(text + "\n")
        except OSError as exc:  # the run is not lost: its document goes to stdout instead
            print(text)
            return _fail("run", f"--out {args.out}: {exc.strerror or exc}; the result document "
                         "went to stdout instead")  # fmt: skip
    else:
        print(text)
    console.print(summary_table(document))
    return 0 if document["status"] == "succeeded" else 1


def server_url(text: str) -> str:
    """A service's base URL as an argument: http(s), a host, a port that can exist (one that
    cannot was retried for ever)."""
    parsed = urllib.parse.urlsplit(text.strip())
    try:
        port = parsed.port  # it raises on a port out of range
    except ValueError:
        port = 0
    if port == 0:  # no service listens on port 0: the agent would retry for ever
        raise argparse.ArgumentTypeError(f"{text!r}: the port must be 1 to 65535")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise argparse.ArgumentTypeError(
            f"{text!r} is no service URL: give http(s)://HOST[:PORT], e.g. https://kw.example.com"
        )
    return text.strip().rstrip("/")


def _add_agent(subparsers: argparse._SubParsersAction) -> None:
    sub = subparsers.add_parser(
        "agent",
        help="claim and run jobs from a kernelwatch service until stopped",
        description="Register with the service, then claim, run and post jobs until SIGTERM "
        "(which finishes or releases the current job). Results wait in the spool while the "
        "service is unreachable.",
    )
    sub.add_argument(
        "--server", required=True, type=server_url, help="e.g. https://kernelwatch.example.com"
    )
    sub.add_argument(
        "--token",
        default=os.environ.get("KERNELWATCH_RUNNER_TOKEN"),
        help="runner token (or $KERNELWATCH_RUNNER_TOKEN)",
    )
    sub.add_argument(
        "--labels",
        default="",
        help="labels this host reports, e.g. gpu=h100: they narrow what the "
        "token may claim, never widen it (its labels come with the token)",
    )
    sub.add_argument(
        "--cpu",
        action="store_true",
        default=_env_on(CPU_ENV),
        help=f"serve CPU suites on a host without a GPU (or ${CPU_ENV}=1); without it the agent "
        "refuses to start where doctor finds no usable GPU",
    )
    sub.add_argument("--spool", type=Path, help="pending results (~/.cache/kernelwatch/spool)")
    sub.add_argument("--cache", type=Path, help="clones and worktrees (~/.cache/kernelwatch)")
    sub.add_argument("--only", help="regular expression over workload ids (testing)")
    sub.add_argument("--poll", type=float, default=5.0, help="seconds between empty claims")
    sub.add_argument(
        "--allow-local-clones",
        action="store_true",
        help="let a job's clone URL be a local path (or $KERNELWATCH_ALLOW_LOCAL_CLONE_URLS=1); "
        "other URLs only over $KERNELWATCH_CLONE_URL_SCHEMES (https,ssh)",
    )
    sub.add_argument(
        "--lease-interval",
        type=float,
        default=60.0,
        help="seconds between lease extensions while a job runs",
    )
    sub.set_defaults(handler=_agent)


def _agent(args: argparse.Namespace) -> int:
    import logging

    from runner.agent.exits import EXIT_CONFIG, EXIT_HOST
    from runner.host import checks as host

    if not args.token:
        return _fail("agent", "--token (or $KERNELWATCH_RUNNER_TOKEN) is required")
    labels = {}
    for item in filter(None, args.labels.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            return _fail("agent", f"label {item!r} is not key=value")
        labels[key.strip()] = value.strip()
    device = "cpu" if args.cpu else "cuda"
    cache = args.cache or host.DEFAULT_CACHE
    # Without --cpu the agent serves CUDA suites, so where doctor's GPU checks fail it is the
    # wrong host or the wrong start: a restart cannot fix that. It leaves the service alone: a
    # registration would claim jobs it cannot run, and an unhealthy report would stop the
    # token's runner on the host where it does work.
    gpu = {} if args.cpu else host.probe_gpu()
    if not args.cpu and (missing := host.gpu_problem(gpu)) is not None:
        why = " ".join(f"{missing.name} {missing.state}: {missing.detail} -> {missing.fix}".split())
        return _fail("agent", f"no usable GPU for CUDA suites ({why}): fix that "
                     "(kernelwatch-runner doctor checks the GPU stack), or pass --cpu "
                     f"(${CPU_ENV}=1) if this host serves CPU suites; nothing was claimed",
                     EXIT_CONFIG)  # fmt: skip
    # Checked before the first claim: a host that cannot run jobs must not take them from the
    # queue (no git; no disk).
    problems = [c for c in host.agent_checks(device, cache, gpu=lambda: gpu) if not c.ok]
    if problems:
        for check in problems:
            print(f"{PROG} agent: {check.line}", file=sys.stderr)
        told = _tell_unhealthy(args.server, args.token, "; ".join(c.line for c in problems))
        print(f"{PROG} agent: {told}", file=sys.stderr)
        return _fail("agent", "this host cannot run jobs: fix the above (kernelwatch-runner "
                     "doctor checks it all), then start again")  # fmt: skip
    from runner.agent.job import make_run_job
    from runner.agent.loop import run_agent
    from runner.host import environment  # the runner's own dependencies, checked above
    from runner.suite.checkout import local_clones_allowed

    local = args.allow_local_clones or local_clones_allowed()

    console = None
    if sys.stderr.isatty():  # a person watches: the log above, the job's progress bars below
        from rich.console import Console
        from rich.logging import RichHandler

        console = Console(stderr=True)
        handler: logging.Handler = RichHandler(console=console, show_path=False)
        logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[handler])
    else:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per claim poll otherwise
    try:
        code = run_agent(
            args.server,
            args.token,
            make_run_job(cache, args.only, console, local_clones=local),
            spool_dir=args.spool,
            labels=labels,
            environment=environment.collect(device, {}),
            poll_interval=args.poll,
            lease_interval=args.lease_interval,
        )
    except ValueError as exc:
        return _fail("agent", str(exc))
    if code == EXIT_HOST and args.cpu:
        # Only a CUDA suite fails a CPU host (require_gpu): a restart would register, claim the
        # next such job and hand it back the same way, every time.
        return _fail("agent", "this agent serves CPU suites (--cpu) and its runner's labels "
                     "gave it a CUDA suite's job (handed back to the queue): give the runner "
                     "labels that only CPU suites' repositories ask for (kernelwatch "
                     "runner-token create NAME --labels ... --rotate), or run it on a GPU host "
                     "without --cpu", EXIT_CONFIG)  # fmt: skip
    return code


def _add_list(subparsers: argparse._SubParsersAction) -> None:
    sub = subparsers.add_parser("list", help="list the workloads of a suite's working tree")
    sub.add_argument(
        "--repo", default=".", help="a local repository path or a clone URL (default: here)"
    )
    sub.add_argument(
        "--commit",
        help="a sha, branch or tag (default: a clone URL's HEAD; a local path's working tree "
        "as it is)",
    )
    sub.add_argument("--cache", type=Path, help="clones (~/.cache/kernelwatch)")
    sub.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sub.set_defaults(handler=_list)


def _is_url(repo: str) -> bool:
    return "://" in repo or repo.startswith("git@")


def _list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from runner.host.checks import DEFAULT_CACHE
    from runner.measure.phase import run_phase
    from runner.suite.checkout import Checkouts, _git, local_problem
    from runner.suite.load import SuiteError, load_suite

    tree = None
    try:
        if _is_url(args.repo) or args.commit:  # as `run` takes it: the suite at a commit
            source, rev = args.repo, args.commit or "HEAD"
            if not _is_url(args.repo):  # the local repository's own name for it, resolved there
                source = str(Path(args.repo).resolve())
                rev = _git("rev-parse", "--verify", f"{rev}^{{commit}}", cwd=Path(source)).strip()
            checkouts = Checkouts(args.cache or DEFAULT_CACHE)
            tree, _ = checkouts.worktree(source, rev, f"list-{os.getpid()}")
        if tree is None and (problem := local_problem(args.repo, repository=False)):
            raise SuiteError(problem)
        suite = load_suite(tree or Path(args.repo).resolve())
        listing = run_phase(suite, "list", []).listing
    except (SuiteError, RuntimeError) as exc:  # CheckoutError is a RuntimeError
        return _fail("list", str(exc))
    finally:
        if tree is not None:  # git forgets the worktree at the next prune (Checkouts.worktree)
            shutil.rmtree(tree, ignore_errors=True)
    if suite.default and not any(suite.selects(w, None) for w in listing):
        tags = sorted({t for w in listing for t in w["tags"]})
        return _fail("list", f"[suite] default {list(suite.default)} selects none of the "
                     f"{len(listing)} workloads: name tags ({', '.join(tags) or 'none here'}) "
                     "or regular expressions over ids")  # fmt: skip
    if args.json:
        print(json.dumps(listing, indent=2))
        return 0
    title = f"suite {suite.name} ({len(listing)} workloads)"
    columns = ("id", "default", "tags", "kernels", "GFLOP")
    rows = [
        (w["id"], "yes" if suite.selects(w, None) else "", ",".join(w["tags"]),
         ",".join(w["kernels"]), f"{w['flops'] / 1e9:.3g}" if w.get("flops") else "")
        for w in listing
    ]  # fmt: skip
    console = Console()
    if not console.is_terminal:  # piped: whole lines, tab-separated, ids as --only takes them
        print("\n".join([title, "\t".join(columns), *("\t".join(r) for r in rows)]))
        return 0
    # Ids are what a person copies into --only: never cut; the other columns wrap instead.
    widest = max((len(r[0]) for r in rows), default=2)
    table = Table(title=title)
    table.add_column("id", no_wrap=True, min_width=min(widest, max(console.width - 30, 20)))
    for column in columns[1:]:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
    return 0


def _add_doctor(subparsers: argparse._SubParsersAction) -> None:
    sub = subparsers.add_parser(
        "doctor",
        help="check that this host can run jobs (GPU, CUDA, CuPy, nvcc, ncu, git, disk, service)",
        description="One line per check: ok, missing or wrong, with the fix. Exit code 0 only "
        "when the host can run jobs; optional pieces (nvcc, ncu, cupti-python) are marked so.",
    )
    sub.add_argument(
        "--server", type=server_url, help="also check the service: reachable, and the token taken"
    )
    sub.add_argument(
        "--token",
        default=os.environ.get("KERNELWATCH_RUNNER_TOKEN"),
        help="runner token (or $KERNELWATCH_RUNNER_TOKEN)",
    )
    sub.add_argument("--cache", type=Path, help="clones and builds (~/.cache/kernelwatch)")
    sub.add_argument("--cpu", action="store_true", default=_env_on(CPU_ENV),
                     help=f"a host for CPU suites: no GPU needed (or ${CPU_ENV}=1)")  # fmt: skip
    sub.add_argument("--json", action="store_true", help="print the checks as JSON")
    sub.set_defaults(handler=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from runner.host import checks as host

    checks = host.agent_checks("cpu" if args.cpu else "cuda", args.cache or host.DEFAULT_CACHE,
                               everything=True)  # fmt: skip
    if args.server:
        checks += host.service_checks(args.server, args.token)
    ready = host.can_run(checks)
    if args.json:
        print(json.dumps({"ready": ready, "checks": [c.as_dict() for c in checks]}, indent=2))
    else:
        for check in checks:
            print(check.line)
        print("this host can run jobs" if ready else "this host cannot run jobs: fix the above")
    return 0 if ready else 1


def _add_parse_ncu(subparsers: argparse._SubParsersAction) -> None:
    sub = subparsers.add_parser(
        "parse-ncu",
        help="print the launches of an Nsight Compute CSV as JSON",
        description=(
            "Parse an `ncu --csv --page raw` or `--page details` output (program output before "
            "the header is skipped) and print its launches as JSON: kernel, block, grid, "
            "metrics (name -> value, unit) and rule findings with estimated speedup."
        ),
    )
    sub.add_argument("file", type=Path, metavar="FILE", help="the CSV that ncu wrote")
    sub.set_defaults(handler=_parse_ncu)


def _parse_ncu(args: argparse.Namespace) -> int:
    path: Path = args.file
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return _fail("parse-ncu", f"{path}: no such file")
    except OSError as exc:
        return _fail("parse-ncu", f"{path}: {exc.strerror or exc}")
    try:
        launches = ncu.parse_csv(text)
    except ncu.NcuCsvError as exc:
        return _fail("parse-ncu", f"{path}: {exc}")
    try:
        print(json.dumps(launches, indent=2), flush=True)
    except BrokenPipeError:  # `parse-ncu FILE | head`: the reader left, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
