"""`kernelwatch-runner`: the runner's command line.

Each subcommand is one `_add_<name>(subparsers)` function that registers its arguments and sets
`handler` to a function taking the parsed arguments and returning the exit code; `run`, `agent`
and `list` join `parse-ncu` the same way. Exit codes: 0 success, 2 usage or input errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from runner import ncu

PROG = "kernelwatch-runner"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="kernelwatch GPU runner: build, check, time and profile kernels."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_parse_ncu(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.handler(args)


def _fail(command: str, message: str) -> int:
    print(f"{PROG} {command}: error: {message}", file=sys.stderr)
    return 2


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
