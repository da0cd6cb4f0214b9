"""`python -m runner.worker CONFIG.json`: one worker process (runner.worker.process).

With $KERNELWATCH_WORKER_PROFILE=DIR each worker runs under cProfile and leaves in DIR its
`MODE-PID.txt`: the calls that took its seconds, by cumulative time (where a check's or a
timing process's seconds go, on the host that ran them)."""

import json
import os
import sys
from pathlib import Path

from runner.worker.process import main

folder = os.environ.get("KERNELWATCH_WORKER_PROFILE")
if not folder:
    sys.exit(main(sys.argv[1]))

import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402

mode = json.loads(Path(sys.argv[1]).read_text()).get("mode", "worker")
profiler, started = cProfile.Profile(), time.perf_counter()
try:
    code = profiler.runcall(main, sys.argv[1])
finally:
    text = io.StringIO()
    print(f"{mode} worker {os.getpid()}: {time.perf_counter() - started:.2f} s in main", file=text)
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(60)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{mode}-{os.getpid()}.txt"), "w") as out:
        out.write(text.getvalue())
sys.exit(code)
