"""Whether a prepare found its compiled code in the runner's caches (runner.measure.
compile_caches): files that appeared while it ran, and Inductor's FX graph cache counters."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

from runner.measure.compile_caches import Watch, cache_folders, describe, new_entries


def test_only_files_written_since_the_prepare_began_count(tmp_path: Path) -> None:
    old = tmp_path / "triton" / "a" / "old.cubin"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"x")
    since = time.time() + 1
    fresh = tmp_path / "triton" / "b" / "new.cubin"
    fresh.parent.mkdir()
    fresh.write_bytes(b"y")
    os.utime(fresh, (since + 1, since + 1))
    folders = {"triton": tmp_path / "triton", "inductor": tmp_path / "missing"}
    assert new_entries(folders, since) == {"triton": 1}


def test_the_folders_are_the_compile_caches_set_for_the_process(tmp_path: Path) -> None:
    env = {"TRITON_CACHE_DIR": str(tmp_path / "t"), "TORCHINDUCTOR_CACHE_DIR": ""}
    assert cache_folders(env) == {"triton": tmp_path / "t"}


def test_an_inductor_fx_graph_miss_is_a_miss_though_no_file_appeared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counters: defaultdict[str, Counter] = defaultdict(Counter)
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", SimpleNamespace(counters=counters))
    watch = Watch({"inductor": tmp_path}, time.time)
    counters["inductor"]["fxgraph_cache_miss"] += 1
    counters["inductor"]["fxgraph_cache_hit"] += 2
    missed = watch.result()
    assert missed == {"hit": False, "new": {},
                      "inductor": {"fxgraph_cache_hit": 2, "fxgraph_cache_miss": 1}}  # fmt: skip
    again = Watch({"inductor": tmp_path}, time.time)
    counters["inductor"]["fxgraph_cache_hit"] += 1
    assert again.result() == {"hit": True, "new": {}, "inductor": {"fxgraph_cache_hit": 1}}
    assert describe({"block": missed, "softmax": again.result(), "scale": {}}) == (
        "1 of 2 hit; block miss (inductor FX graph: 1 missed)"
    )


def test_nothing_is_said_where_there_is_no_cache_to_read() -> None:
    assert Watch({}, time.time).result() == {}
    assert describe({"a": {}}) == ""


def test_files_inductor_writes_while_every_graph_hits_are_no_miss_but_a_compilers_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an H100 a compiled block whose FX graphs all hit left one new file a process in
    Inductor's folder: its bookkeeping, not a compile. A Triton file beside it is one."""
    counters: defaultdict[str, Counter] = defaultdict(Counter)
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", SimpleNamespace(counters=counters))
    folders = {"inductor": tmp_path / "inductor", "triton": tmp_path / "triton"}
    for folder in folders.values():
        folder.mkdir()
    watch = Watch(folders, lambda: time.time() - 1)
    counters["inductor"]["fxgraph_cache_hit"] += 2
    (tmp_path / "inductor" / "record.json").write_text("{}")
    assert watch.result() == {"hit": True, "new": {}, "inductor": {"fxgraph_cache_hit": 2}}
    (tmp_path / "triton" / "k.cubin").write_bytes(b"x")
    assert watch.result()["hit"] is False
    unread = Watch(folders, lambda: time.time() - 1)  # no counter moved: files are all it has
    assert unread.result() == {"hit": False, "new": {"inductor": 1, "triton": 1}}
