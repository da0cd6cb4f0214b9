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

The first five qualify; each gets a tolerance well above its spread (DRAM bytes read also an
absolute one). A change beyond it is a notice ("work +3.1%"), shown beside the timing verdict,
never a red commit by itself (unless the suite declares `work_changes = "fail"`).
"""

from __future__ import annotations

from collections.abc import Mapping

# counter -> relative tolerance: a move within it is "same" (how each is shown: the label the
# runner sent with the capture, runner/profile/ncu.py METRICS)
WORK_COUNTERS: dict[str, float] = {
    "smsp__inst_executed.sum": 0.001,
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 0.001,
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 0.001,
    "lts__t_sectors_srcunit_tex_op_read.sum": 0.001,
    "dram__bytes_read.sum": 0.005,
}
ABSOLUTE = {"dram__bytes_read.sum": 64 * 1024}  # and a move within this many units is "same"


def judge(counter: str, base: float | None, head: float) -> tuple[str, float | None]:
    """("new", None) without a base; ("changed", change) beyond the counter's tolerance;
    ("same", change) within it. A base of zero changes only if the head is not zero."""
    if base is None:
        return "new", None
    if base == 0:
        return ("same", 0.0) if head == 0 else ("changed", None)
    change = head / base - 1
    within = abs(change) <= WORK_COUNTERS[counter] or abs(head - base) <= ABSOLUTE.get(counter, 0)
    return ("same" if within else "changed"), change


def verdicts(
    base: Mapping[str, float] | None, head: Mapping[str, float]
) -> list[tuple[str, float | None, float, str, float | None]]:
    """(counter, base value, head value, verdict, change) for every work counter `head` has."""
    out = []
    for counter in WORK_COUNTERS:
        if counter not in head:
            continue
        before = base.get(counter) if base is not None else None
        verdict, change = judge(counter, before, float(head[counter]))
        out.append((counter, before, float(head[counter]), verdict, change))
    return out


def describe(label: str, change: float | None) -> str:
    """'instructions +3.1%' (or 'instructions from 0' where there were none)."""
    return f"{label} from 0" if change is None else f"{label} {change:+.1%}"
