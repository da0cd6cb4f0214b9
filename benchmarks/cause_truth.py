"""The truth of the cause benchmark: each case's base and head builds timed interleaved in one
process (A B, then B A, round after round), L2 flushed before every sample, CUDA events, compared
by interquartile means, the whole repeated in PROCESSES fresh processes. Its own code: it shares
only the suite's workloads (their buffers and launches) with the runner.

    python -m benchmarks.cause_truth BASE_BUILD HEAD_BUILD OUT.json

OUT.json: per workload id, base and head times (us), the mean change and each process's change.
GPU host only (CuPy).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "cause_suite"))

from causesuite.workloads import all_workloads, load_module  # noqa: E402

from benchmarks.history_truth import alternated, in_processes, mean_over_processes  # noqa: E402

PROCESSES = 3
ROUNDS = 6
SAMPLES = 6
WARMUP = 3
FLUSH_BYTES = 256 << 20  # > 2 x the H100's 50 MB L2


def measure(base_build: str, head_build: str) -> dict[str, Any]:
    import cupy as cp

    flush_buffer = cp.empty(FLUSH_BYTES, dtype=cp.uint8)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    modules = {"base": load_module(base_build), "head": load_module(head_build)}
    out = {}
    for w in all_workloads():
        instances = {side: w.prepare(1, module=m) for side, m in modules.items()}

        def sample(side: str, instances: dict[str, Any] = instances) -> float:
            instances[side].reset()
            cp.cuda.runtime.memsetAsync(flush_buffer.data.ptr, 0, FLUSH_BYTES,
                                        cp.cuda.get_current_stream().ptr)  # fmt: skip
            start.record()
            instances[side].launch()
            end.record()
            end.synchronize()
            return cp.cuda.get_elapsed_time(start, end) * 1e3

        out[w.id] = alternated(sample, WARMUP, ROUNDS, SAMPLES)
        for instance in instances.values():
            instance.close()
        cp.get_default_memory_pool().free_all_blocks()
    return out


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    base, head, out = args[0], args[1], Path(args[2])
    if len(args) > 3 and args[3] == "--one":
        out.write_text(json.dumps(measure(base, head)))
        return 0
    started = time.monotonic()
    runs = in_processes("benchmarks.cause_truth", [base, head], out, PROCESSES)
    result = mean_over_processes(runs)
    out.write_text(json.dumps({"seconds": time.monotonic() - started, "workloads": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
