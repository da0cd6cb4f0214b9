"""Process-level tuning of a serving process."""

from __future__ import annotations

import gc

# Container allocations between young collections. CPython's 700 suits scripts; a request
# that builds a few thousand rows and models would otherwise run several collections, and
# every tenth or hundredth of them walks the older generations too.
YOUNG_THRESHOLD = 50_000


def tune_garbage_collector() -> None:
    """Keep the cyclic garbage collector out of request latency.

    What the process holds once the app is up (modules, the app, SQLAlchemy's caches) lives as
    long as the process, yet every full collection would walk it again: tens of milliseconds on
    a request that happens to trigger one, the long tail of the read latencies. Frozen, those
    objects are never walked; the rest is collected as usual, only less often.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
