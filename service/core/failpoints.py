"""Named points where the chaos tests can make the service pause, to land a kill exactly there.

`KERNELWATCH_FAILPOINTS="after_store=0.3"` makes `await pause("after_store")` sleep 0.3 s.
benchmarks.chaos kills the service inside such a pause to prove that a run stored just before
its answer was lost is not stored twice when the runner sends it again. Read once per process
from the environment; unset, as outside those tests, a point costs a dict lookup."""

from __future__ import annotations

import asyncio
import os
from functools import cache

ENV = "KERNELWATCH_FAILPOINTS"


@cache
def _configured() -> dict[str, float]:
    points: dict[str, float] = {}
    for item in os.environ.get(ENV, "").split(","):
        name, _, seconds = item.partition("=")
        if name.strip():
            points[name.strip()] = float(seconds or 0)
    return points


async def pause(name: str) -> None:
    seconds = _configured().get(name)
    if seconds:
        await asyncio.sleep(seconds)
