"""A workload redefined in place: a commit that retires a workload's series and starts another of
the same workload, kernels and work under other parameters (`Reduce(blocks=1056)` becoming
`Reduce(blocks=132)`: a launch setting changed, the same reduction done).

A series is its workload's parameters among other things, so the new definition starts a new
series and the old one goes missing; what changed between them would be shown nowhere. Here the
two are paired, so that the new series' first result is judged against the old series' level
(service.evaluation.verdicts.evaluate). A pair needs the same workload name, kernels, metric, timing
method and GPU, and the same work (FLOPs and bytes: a size changed is not the same workload
launched another way), and is made only where it is the one such pair: two sizes of a sweep
swapped for two others pair with nothing.

Pure: plain tuples in, pairs out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable


def pairs(
    started: Iterable[tuple[int, Hashable]], retired: Iterable[tuple[int, Hashable]]
) -> dict[int, int]:
    """new series id -> retired series id, for every key (what a pair must share) that exactly
    one started and exactly one retired series have."""
    new: dict[Hashable, list[int]] = defaultdict(list)
    old: dict[Hashable, list[int]] = defaultdict(list)
    for series_id, key in started:
        new[key].append(series_id)
    for series_id, key in retired:
        old[key].append(series_id)
    return {
        new[key][0]: old[key][0] for key in new if len(new[key]) == 1 and len(old.get(key, ())) == 1
    }
