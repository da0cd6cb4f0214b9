"""Whether a workload's `prepare` found what it compiles in the runner's compile caches (Triton's,
Inductor's, torch extensions', the driver's JIT cache: runner.suite.build.COMPILE_CACHES) or
compiled it afresh: a prepare of 10 s in every process is a cache that misses, and the log
says so per workload ("compile caches: 4 of 5 hit; tmatmul miss (triton: 4 new entries)").

Read two ways, neither needing to know a compiler's version: the files that appeared in each
cache folder while the workload was prepared, and Inductor's own FX graph cache counters where
torch is loaded (`torch._dynamo.utils.counters["inductor"]`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

INDUCTOR_COUNTERS = ("fxgraph_cache_hit", "fxgraph_cache_miss")
INDUCTOR_FOLDER = "inductor"  # its name among runner.suite.build.COMPILE_CACHES
MAX_FILES = 200_000  # a walk this long is no longer worth its time: the folder is not read


def cache_folders(env: dict[str, str] | None = None) -> dict[str, Path]:
    """Name -> folder of each compile cache this process writes to."""
    from runner.suite.build import COMPILE_CACHES

    env = os.environ if env is None else env
    return {name: Path(env[v]) for v, name in COMPILE_CACHES.items() if env.get(v)}


def _files(folder: Path) -> Iterator[os.DirEntry[str]]:
    stack = [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        yield entry
        except OSError:
            continue


def new_entries(folders: dict[str, Path], since: float) -> dict[str, int]:
    """Per cache, how many files were written at or after `since` (time.time())."""
    out = {}
    for name, folder in folders.items():
        count = 0
        for i, entry in enumerate(_files(folder)):
            if i >= MAX_FILES:
                break
            try:
                count += entry.stat(follow_symlinks=False).st_mtime >= since
            except OSError:
                continue
        if count:
            out[name] = count
    return out


def inductor_counters() -> dict[str, int]:
    """Inductor's FX graph cache hits and misses so far in this process (none without torch)."""
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None)
    try:
        inductor = counters["inductor"] if counters is not None else {}
        return {k: int(inductor[k]) for k in INDUCTOR_COUNTERS if inductor.get(k)}
    except (KeyError, TypeError, ValueError):
        return {}


class Watch:
    """Around one `prepare`: what it found in the caches and what it compiled afresh."""

    def __init__(self, folders: dict[str, Path], clock: Any) -> None:
        self.folders, self.clock = folders, clock
        self.since = clock()
        self.counters = inductor_counters()

    def result(self) -> dict[str, Any]:
        """{"hit": bool, "new": {cache: files}, "inductor": {counter: change}}; {} where there
        is no cache to read."""
        new = new_entries(self.folders, self.since)
        now = inductor_counters()
        moved = {k: now.get(k, 0) - self.counters.get(k, 0) for k in INDUCTOR_COUNTERS}
        moved = {k: v for k, v in moved.items() if v}
        if not self.folders and not moved:
            return {}
        if moved.get("fxgraph_cache_hit") and not moved.get("fxgraph_cache_miss"):
            # Every graph found: what Inductor then writes in its own folder is bookkeeping (on
            # an H100 one file a process, each of its FX graphs a hit), not code compiled again.
            new.pop(INDUCTOR_FOLDER, None)
        hit = not new and not moved.get("fxgraph_cache_miss")
        return {"hit": hit, "new": new, **({"inductor": moved} if moved else {})}


def describe(found: dict[str, dict[str, Any]]) -> str:
    """'4 of 5 hit; tmatmul miss (triton: 4 new entries)' for workload -> Watch.result()."""
    read = {wid: r for wid, r in sorted(found.items()) if r}
    if not read:
        return ""
    hits = sum(r["hit"] for r in read.values())
    said = [f"{hits} of {len(read)} hit"]
    for wid, r in read.items():
        if r["hit"]:
            continue
        why = [f"{cache}: {n} new entries" for cache, n in sorted(r["new"].items())]
        if misses := r.get("inductor", {}).get("fxgraph_cache_miss"):
            why.append(f"inductor FX graph: {misses} missed")
        said.append(f"{wid} miss ({', '.join(why)})")
    return "; ".join(said)
