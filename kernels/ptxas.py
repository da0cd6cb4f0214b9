"""Parse the resource report that ``ptxas -v`` writes to stderr (pure functions, no CUDA).

A report looks like (nvcc 13, sm_90)::

    ptxas info    : Compiling entry function 'gemm_bias_act_fwd' for 'sm_90'
    ptxas info    : Function properties for gemm_bias_act_fwd
        8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
    ptxas info    : Used 128 registers, used 1 barriers, 8 bytes cumulative stack size, 16896 ...
    ptxas info    : Compile time = 649.428 ms

Only entry functions (kernels) are reported; properties of non-inlined device functions are
skipped. Older toolkits print ``..., 400 bytes cmem[0]`` on the ``Used`` line: that is parsed too.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[\d+\]")
_TIME = re.compile(r"Compile time = ([0-9.]+) ms")


@dataclass(frozen=True)
class PtxasStats:
    """Resources of one kernel as ptxas reported them."""

    kernel: str
    arch: str
    registers: int
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    barriers: int = 0
    constant_bytes: int = 0
    ptxas_ms: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _split_lines(text: str) -> list[str]:
    # ptxas ends without a newline; concatenated reports then glue "ms" to the next "ptxas".
    return text.replace("msptxas", "ms\nptxas").splitlines()


def parse_ptxas(text: str) -> dict[str, PtxasStats]:
    """Map each kernel named in a ``ptxas -v`` report to its resource usage."""
    fields: dict[str, dict] = {}
    frames: dict[str, tuple[int, int, int]] = {}
    entry: str | None = None
    props_for: str | None = None
    for line in _split_lines(text):
        if m := _ENTRY.search(line):
            entry = m.group(1)
            fields[entry] = {"kernel": entry, "arch": m.group(2)}
            props_for = None
            continue
        if m := _PROPS.search(line):
            props_for = m.group(1)
            continue
        if m := _FRAME.search(line):
            if props_for is not None:
                frames[props_for] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            props_for = None
            continue
        if entry is None:
            continue
        if m := _USED.search(line):
            f = fields[entry]
            f["registers"] = int(m.group(1))
            if b := _BARRIERS.search(line):
                f["barriers"] = int(b.group(1))
            if s := _SMEM.search(line):
                f["shared_bytes"] = int(s.group(1))
            if c := _CMEM.findall(line):
                f["constant_bytes"] = sum(int(x) for x in c)
        elif m := _TIME.search(line):
            fields[entry]["ptxas_ms"] = float(m.group(1))
    out: dict[str, PtxasStats] = {}
    for name, f in fields.items():
        stack, stores, loads = frames.get(name, (0, 0, 0))
        f.setdefault("registers", 0)
        out[name] = PtxasStats(
            **f, stack_bytes=stack, spill_store_bytes=stores, spill_load_bytes=loads
        )
    return out
