"""torch's softmax over fp32 rows. WORKSPACE is the history's memory change: a scratch tensor
of the input's size allocated on every launch and never read (as one kept "for a later fused
backward" is), which costs the GPU no time and the allocator the input's bytes again."""

from __future__ import annotations

from typing import Any

WORKSPACE = False


def softmax(x: Any) -> Any:
    import torch

    scratch = torch.empty_like(x) if WORKSPACE else None
    out = torch.softmax(x, dim=-1)
    del scratch  # held until the softmax is queued: the allocator's peak counts it
    return out
