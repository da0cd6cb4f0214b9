"""`python -m runner.worker CONFIG.json`: one worker process (runner.worker.process), ended as
runner.worker.ending says.

With $KERNELWATCH_WORKER_PROFILE=DIR each worker runs under cProfile and leaves in DIR its
`MODE-PID.txt`: the calls that took its seconds, by cumulative time (where a check's or a
timing process's seconds go, on the host that ran them)."""

import json
import os
import sys
from pathlib import Path

from runner.worker.ending import end
from runner.worker.process import Protocol, main


def profiled(config: str, folder: str, mode: str, protocol: Protocol) -> int:
    import cProfile
    import io
    import pstats
    import time

    profiler, started = cProfile.Profile(), time.perf_counter()
    try:
        return profiler.runcall(main, config, protocol)
    finally:
        text = io.StringIO()
        took = time.perf_counter() - started
        print(f"{mode} worker {os.getpid()}: {took:.2f} s in main", file=text)
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(60)
        os.makedirs(folder, exist_ok=True)
        Path(folder, f"{mode}-{os.getpid()}.txt").write_text(text.getvalue())


config = sys.argv[1]
mode = str(json.loads(Path(config).read_text()).get("mode", "worker"))
folder = os.environ.get("KERNELWATCH_WORKER_PROFILE")
protocol = Protocol()
end(profiled(config, folder, mode, protocol) if folder else main(config, protocol), mode,
    protocol.send)  # fmt: skip
