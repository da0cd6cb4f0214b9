"""Work counters: the ncu counters steady enough to judge a kernel's work exactly.

Below ~10 µs timing noise between processes is 2-4%, so a kernel doing 3% more work goes
unseen by its timing. The counters ncu replays are nearly deterministic. Measured on an H100
(benchmarks/work_counters.py, benchmarks/results/work_counters_h100.json: the history suite's
four 5 µs streaming kernels, 3 processes x 5 launches per build, `--cache-control all`, and
builds reading 1-10% more bytes):

| counter                                         | spread in one build | moved by +1% read |
| smsp__inst_executed.sum                         | 0.00%               | (code changed)    |
| l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum  | 0.00%               | +1.00%            |
| l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum | 0.00%               | +1.00%            |
| lts__t_sectors_srcunit_tex_op_read.sum          | 0.00%               | +1.00%            |
| dram__bytes_read.sum                            | 0.10%               | +1.02%            |
| lts__t_sectors.sum                              | 1.30%               | +0.50%            |
| dram__bytes_write.sum                           | 0 B or a few sectors: does not qualify  |
| gpu__time_duration.sum                          | 11.4% under ncu     | +0.16%            |

Across two runner runs of the same code (the cause benchmark's base and A/A commits, 11
kernels, tests/service/fixtures/causes_h100) instructions, load sectors and requests did not
move at all (that capture predates the L2 read sectors); DRAM bytes
read moved by up to 18 KB (0.84% of a 2.2 MB read, 0.01% of the 64-134 MB ones).

The first five qualify on streaming kernels, but how exact a counter is depends on the kernel.
On an H200 (benchmarks/history_gpu.py, ten runs of identical code), instructions and global
load sectors and requests stayed exact on every kernel, while L2 sectors read by the SMs moved
by 4-12% between runs of a tiled SGEMM and by 1-2% on an L2-bound kernel behind a neighbour, and
DRAM bytes read by up to 9% on an SGEMM that spills (its local memory goes through the L2). A
fixed tolerance fitted to streaming kernels turned that into notices on commits that changed
nothing. So each counter of each kernel of a workload is judged against its own noise, learned
from pairs of its captures whose determinants are equal (the kernel's compiled code, its launch
configuration, the workload and its inputs, the GPU and the tools: runner.profile.reuse) and
that are two measurements, not one reused section seen twice (their `profiled_at` differ):

- instructions executed and global load sectors and requests count what the code does with its
  launch and inputs, which every replay of ncu counts alike: they are steady from the start
  (EXACT), unless such pairs show them move;
- the counters of what the caches did (L2 sectors read by the SMs, DRAM bytes read) shown in
  fewer than MIN_PAIRS such pairs are *learning*: shown, no notice. Where the runner reuses an
  unchanged kernel's section (the default), such pairs come only from a kernel profiled again
  with nothing changed (another host, an evicted cache, $KERNELWATCH_NCU_REUSE=0);
- otherwise a counter's tolerance is the larger of its floor (WORK_COUNTERS, and for DRAM bytes an
  absolute one) and how far the next move of unchanged code may go given the moves seen between
  such pairs: the two-sided 1 - NOTICE_ALPHA bound of Student's t with as many degrees of freedom
  as pairs, times their root mean square (a move of unchanged code has mean zero, so the next
  one over that root mean square follows t). Three or four pairs know the noise poorly and the
  bound says so: on an H200 the L2 sectors read by a spilling SGEMM moved 0.01-0.54% in its
  first five pairs and 1.7% in its sixth (benchmarks/results/history_h200_wander), which three
  times the largest move (the rule before) called work; the bound was 3.8% there. A move beyond
  the tolerance is a notice ("work +3.1%"), shown beside the timing verdict, never a red commit
  by itself (unless the suite declares `work_changes = "fail"`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy.stats import t as student_t

# counter -> the smallest relative tolerance: a move within it is "same" however steady the
# counter (how each is shown: the label the runner sent, runner/profile/ncu.py METRICS)
WORK_COUNTERS: dict[str, float] = {
    "smsp__inst_executed.sum": 0.001,
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 0.001,
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 0.001,
    "lts__t_sectors_srcunit_tex_op_read.sum": 0.001,
    "dram__bytes_read.sum": 0.005,
}
# What a person reads for each work counter where a capture carried no label of its own (a
# document from before the runner sent labels, an import): the runner's words for the same
WORK_LABELS: dict[str, str] = {
    "smsp__inst_executed.sum": "instructions executed",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global load requests",
    "lts__t_sectors_srcunit_tex_op_read.sum": "L2 sectors read by the SMs",
    "dram__bytes_read.sum": "DRAM bytes read",
}
ABSOLUTE = {"dram__bytes_read.sum": 64 * 1024}  # and a move within this many units is "same"
# ncu's own launch figures that are part of what determines a kernel's counters, beside the
# runner's digest (grid, block, registers, shared memory)
LAUNCH = (
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_static",
)
# Counted, not sampled: the same for the same code, launch and inputs in every replay (on every
# kernel measured so far, H100 and H200), so a +0.5% move is work, from the first pair of runs.
EXACT = frozenset({
    "smsp__inst_executed.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
})  # fmt: skip
MIN_PAIRS = 3
# How often a counter of unchanged code may move beyond its tolerance, were its moves normal.
# They are not: the spilling SGEMM's L2 reads moved 0.1-1.0% in seven pairs and 3.0% in the
# eighth (benchmarks/results/history_h200_after), beyond the 0.001 bound (2.9%), so the bound
# is set for tails heavier than normal ones (4.8% there).
NOTICE_ALPHA = 0.0001


@dataclass(frozen=True)
class Capture:
    """One kernel's counters in one run: what determined them (None: not known) and the commit
    they were measured at."""

    determinants: str | None
    profiled_at: str | None
    values: Mapping[str, float]


def determinants(runner_key: str | None, metrics: Mapping[str, Mapping[str, object]]) -> str | None:
    """The runner's digest with ncu's launch configuration beside it; None without the digest."""
    if not runner_key:
        return None
    launch = ",".join(str(metrics.get(m, {}).get("value", "")) for m in LAUNCH)
    return f"{runner_key}:{launch}"


@dataclass(frozen=True)
class Noise:
    """How far one counter moved between captures of unchanged determinants."""

    counter: str
    pairs: int
    largest: float  # the largest relative move among them
    rms: float = 0.0  # the root mean square of the moves

    def tolerance(self) -> float:
        """The counter's floor, or the prediction bound of the next move of unchanged code."""
        floor = WORK_COUNTERS[self.counter]
        if self.pairs < 1 or self.rms == 0:
            return floor
        return max(floor, float(student_t.ppf(1 - NOTICE_ALPHA / 2, self.pairs)) * self.rms)

    @property
    def steady(self) -> bool:
        return self.pairs >= MIN_PAIRS or self.counter in EXACT


def move(counter: str, before: float, after: float) -> float:
    """The relative move between two values, 0 within the counter's absolute tolerance (and
    between two zeros), inf from zero to anything else."""
    if abs(after - before) <= ABSOLUTE.get(counter, 0) or after == before:
        return 0.0
    return abs(after / before - 1) if before else float("inf")


def learn(history: Sequence[Capture]) -> dict[str, Noise]:
    """Per work counter, its noise over `history` (one kernel's captures along the branch,
    oldest first): the moves between each capture and the previous one of equal
    determinants, where the two were measured at different commits."""
    last: dict[str, Capture] = {}
    moves: dict[str, list[float]] = {c: [] for c in WORK_COUNTERS}
    for capture in history:
        key = capture.determinants
        if key is None:
            continue
        before = last.get(key)
        last[key] = capture
        if before is None or not capture.profiled_at or capture.profiled_at == before.profiled_at:
            continue
        for counter in WORK_COUNTERS:
            if counter in capture.values and counter in before.values:
                moves[counter].append(
                    move(counter, before.values[counter], capture.values[counter])
                )
    return {c: _noise(c, m) for c, m in moves.items()}


def _noise(counter: str, moves: Sequence[float]) -> Noise:
    finite = [m for m in moves if math.isfinite(m)]
    if len(finite) < len(moves):  # from zero to something: no bound holds it
        return Noise(counter, len(moves), math.inf, math.inf)
    rms = math.sqrt(sum(m * m for m in finite) / len(finite)) if finite else 0.0
    return Noise(counter, len(moves), max(finite, default=0.0), rms)


@dataclass(frozen=True)
class Judged:
    counter: str
    base: float | None
    value: float
    verdict: str  # new | learning | same | changed
    change: float | None
    tolerance: float | None
    pairs: int


def judge(counter: str, base: float | None, head: float, noise: Noise | None) -> Judged:
    """ "new" without a base; "learning" while the counter has not been shown steady;
    otherwise "changed" beyond its tolerance, "same" within it. A base of zero changes only if
    the head is not zero (its change then is None)."""
    noise = noise or Noise(counter, 0, 0.0)
    if base is None:
        return Judged(counter, None, head, "new", None, None, noise.pairs)
    change = head / base - 1 if base else (0.0 if head == 0 else None)
    if not noise.steady:
        return Judged(counter, base, head, "learning", change, None, noise.pairs)
    tolerance = noise.tolerance()
    verdict = "same" if move(counter, base, head) <= tolerance else "changed"
    return Judged(counter, base, head, verdict, change, tolerance, noise.pairs)


def verdicts(
    base: Mapping[str, float] | None,
    head: Mapping[str, float],
    noise: Mapping[str, Noise] | None = None,
) -> list[Judged]:
    """A verdict for every work counter `head` has."""
    out = []
    for counter in WORK_COUNTERS:
        if counter not in head:
            continue
        before = base.get(counter) if base is not None else None
        out.append(judge(counter, before, float(head[counter]), (noise or {}).get(counter)))
    return out


def describe(label: str, change: float | None) -> str:
    """'instructions +3.1%' (or 'instructions from 0' where there were none)."""
    return f"{label} from 0" if change is None else f"{label} {change:+.1%}"
