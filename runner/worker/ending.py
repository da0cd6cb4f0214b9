"""How a worker process ends once its results are sent: its exit handlers run, its streams are
flushed, and it leaves without the interpreter's teardown.

A process that imported torch and compiled with Inductor spent ~1.5 s tearing the interpreter
down (its modules' dictionaries, every object left) against 0.06 s ending this way, 0.015 s of
it in its `atexit` handlers (CPU torch 2.13, the doubt suite's compiled block, 2026-12-07); a
commit's nine to fifteen check, timing and pair processes each paid it, one after the other,
with nothing left to wait for. Exit handlers still run (Inductor's compile workers are shut
down; a suite's own handlers run). The ncu pass's and timelines' workers end as usual: their
tools' own libraries finish their reports as the process exits. $KERNELWATCH_WORKER_TEARDOWN=1
ends every worker the usual way.

A worker ended this way tells its parent how long its exit handlers took (an `ending` message)
before it leaves, so that a process's log splits the seconds from its last workload to its end
into those and the process's own end (runner.measure.spent): on an H100 a pair process of the
doubt suite's compiled block spent 2.0-2.9 s there, the suite's processes 0.1-1.0 s, and the log
could not say in what (benchmarks/results/dated/2026-12-08/doubt_h100)."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time
from collections.abc import Callable

TEARDOWN_ENV = "KERNELWATCH_WORKER_TEARDOWN"
QUICK_MODES = ("list", "check", "time")


def end(code: int, mode: str, say: Callable[..., None] | None = None) -> None:
    """Leave the process with `code`; `say` (the worker's protocol) hears how long its exit
    handlers took, so that the parent tells them apart from the process's own end."""
    if mode not in QUICK_MODES or os.environ.get(TEARDOWN_ENV, "").strip() in ("1", "yes", "on"):
        sys.exit(code)
    started = time.perf_counter()
    atexit._run_exitfuncs()
    if say is not None:
        with contextlib.suppress(OSError, ValueError):  # a parent that stopped listening
            say(event="ending", exit_handlers=round(time.perf_counter() - started, 3))
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)
