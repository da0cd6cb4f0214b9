"""How a worker process ends once its results are sent: its exit handlers run, its streams are
flushed, and it leaves without the interpreter's teardown.

A process that imported torch and compiled with Inductor spent ~1.5 s tearing the interpreter
down (its modules' dictionaries, every object left) against 0.06 s ending this way, 0.015 s of
it in its `atexit` handlers (CPU torch 2.13, the doubt suite's compiled block, 2026-12-07); a
commit's nine to fifteen check, timing and pair processes each paid it, one after the other,
with nothing left to wait for. Exit handlers still run (Inductor's compile workers are shut
down; a suite's own handlers run). The ncu pass's and timelines' workers end as usual: their
tools' own libraries finish their reports as the process exits. $KERNELWATCH_WORKER_TEARDOWN=1
ends every worker the usual way."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

TEARDOWN_ENV = "KERNELWATCH_WORKER_TEARDOWN"
QUICK_MODES = ("list", "check", "time")


def end(code: int, mode: str) -> None:
    """Leave the process with `code`."""
    if mode not in QUICK_MODES or os.environ.get(TEARDOWN_ENV, "").strip() in ("1", "yes", "on"):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)
