"""`python -m benchmarks.chaos`: the arguments, and the steps run one after the other."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import benchmarks.chaos
from benchmarks.chaos.crashes import agent_kills, service_kills
from benchmarks.chaos.load import load, stub_agent_main
from benchmarks.chaos.survey import Report


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.chaos", description=benchmarks.chaos.__doc__.split("\n")[0]
    )
    p.add_argument("--database", choices=["sqlite", "postgres"], default="postgres")
    p.add_argument(
        "--postgres-url", default=os.environ.get("KERNELWATCH_TEST_POSTGRES_URL"), help="admin URL"
    )
    p.add_argument("--agent-kills", type=int, default=20)
    p.add_argument("--service-kills", type=int, default=20)
    p.add_argument("--load-jobs", type=int, default=500)
    p.add_argument("--load-agents", type=int, default=8)
    p.add_argument("--readers", type=int, default=20)
    p.add_argument("--read-seconds", type=float, default=15.0)
    p.add_argument("--only", choices=["crash", "load"])
    p.add_argument("--keep", action="store_true", help="keep the work folder (logs)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["stub-agent"]:
        return stub_agent_main(argv[1:])
    args = parse_args(argv)
    if args.database == "postgres" and not args.postgres_url:
        raise SystemExit(
            "--database postgres needs --postgres-url or KERNELWATCH_TEST_POSTGRES_URL"
        )
    reports: list[Report] = []
    with contextlib.ExitStack() as stack:
        if args.keep:
            work = Path(tempfile.mkdtemp(prefix="kw-chaos-"))
            print(f"logs are kept in {work}", flush=True)
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kw-chaos-")))
        steps: list[tuple[str, Callable[[Path], Report]]] = []
        db, pg = args.database, args.postgres_url
        if args.only in (None, "crash"):
            steps.append(("agent", lambda w: agent_kills(db, args.agent_kills, pg, w)))
            steps.append(("service", lambda w: service_kills(db, args.service_kills, pg, w)))
        if args.only in (None, "load"):
            sizes = (args.load_jobs, args.load_agents, args.readers, args.read_seconds)
            steps.append(("load", lambda w: load(db, *sizes, pg, w)))
        for name, step in steps:
            folder = work / name
            folder.mkdir()
            report = step(folder)
            reports.append(report)
            print(report.table(), flush=True)
            print(flush=True)
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
