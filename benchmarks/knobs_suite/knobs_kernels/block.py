"""The compiled block: a normalisation, GELU and a residual add over rows, which Inductor fuses
into one kernel. GRAPH_BREAK splits the graph after the GELU (two kernels, the intermediate
written and read back). TRACE_STEPS is a compile-time cost with no runtime one: a Python loop
over constants that Dynamo evaluates step by step while it traces, in every process, and that
leaves nothing in the graph."""

from __future__ import annotations

from typing import Any

GRAPH_BREAK = False
TRACE_STEPS = 0


def block(x: Any, residual: Any, gain: Any) -> Any:
    import torch

    half = 0.5
    for _ in range(TRACE_STEPS):
        half = half * 1.0
    h = (x - x.mean(dim=-1, keepdim=True)) * torch.rsqrt(x.var(dim=-1, keepdim=True) + 1e-5)
    h = torch.nn.functional.gelu(h * gain)
    if GRAPH_BREAK:
        torch._dynamo.graph_break()
    return h * half + residual
