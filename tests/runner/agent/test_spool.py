"""The spool of result documents on disk, and the backoff between retries."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest

from runner.agent.spool import Backoff, Spool, default_spool_dir


def doc(run_id: str, job_id: int = 7) -> dict:
    return {"run_id": run_id, "job_id": job_id, "lease_token": "kwa_x", "samples": [1.5, 2.0]}


def test_a_document_is_on_disk_whole_and_alone(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    entry = spool.add(doc("3f0c9a52-7d1e-4c38-9b6a-2e5d8f41c0aa"))
    assert entry.path == tmp_path / "spool" / "3f0c9a52-7d1e-4c38-9b6a-2e5d8f41c0aa.json"
    assert json.loads(entry.path.read_text()) == doc(entry.run_id)
    assert entry.load() == doc(entry.run_id)
    assert sorted(p.name for p in spool.directory.iterdir()) == [entry.path.name]  # no temp file
    spool.add({**doc(entry.run_id), "samples": [3.0]})  # the same run id replaces, never doubles
    assert [p.load()["samples"] for p in spool.pending()] == [[3.0]]


def test_pending_is_oldest_first_and_remove_forgets(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    now = time.time()
    for age, run_id in ((10, "c"), (30, "a"), (20, "b")):
        os.utime(spool.add(doc(run_id)).path, (now - age, now - age))
    assert [p.run_id for p in spool.pending()] == ["a", "b", "c"]
    spool.remove("b")
    spool.remove("b")  # already gone: fine
    assert [p.run_id for p in spool.pending()] == ["a", "c"]
    assert len(spool) == 2


def test_reject_keeps_the_document_and_the_reason(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.add(doc("r1"))
    target = spool.reject("r1", "POST http://svc/api/v1/runs answered 422: invalid document")
    assert target == tmp_path / "rejected" / "r1.json"
    assert spool.pending() == []
    assert spool.rejected() == [target]
    assert json.loads(target.read_text()) == doc("r1")
    assert "answered 422" in (tmp_path / "rejected" / "r1.reason.txt").read_text()


def test_discard_keeps_it_aside_and_notes_it(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.add(doc("d1", job_id=42))
    spool.discard("d1", "answered 409: job 42 is queued, not running: its lease is gone")
    assert spool.pending() == [] and spool.rejected() == []  # never posted again, not an error
    assert json.loads((tmp_path / "superseded" / "d1.json").read_text()) == doc("d1", job_id=42)
    (line,) = spool.discarded_log.read_text().splitlines()
    note = json.loads(line)
    assert (note["run_id"], note["job_id"]) == ("d1", 42)
    assert "409" in note["reason"]


def test_odd_run_ids_stay_inside_the_spool(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    entry = spool.add(doc("../../escape attempt"))
    assert entry.path.parent == tmp_path / "spool"
    assert [p.run_id for p in spool.pending()] == ["../../escape attempt"]
    spool.remove("../../escape attempt")
    assert spool.pending() == []
    with pytest.raises(ValueError, match="run_id"):
        spool.add({"job_id": 1})


def test_stale_temporary_files_are_cleaned_young_ones_kept(tmp_path: Path) -> None:
    old, young = tmp_path / ".x.json.abc.tmp", tmp_path / ".y.json.def.tmp"
    old.write_text("{")
    young.write_text("{")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    spool = Spool(tmp_path)
    assert not old.exists() and young.exists()
    assert spool.pending() == []


def test_the_default_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_spool_dir() == tmp_path / "kernelwatch" / "spool"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_spool_dir() == Path.home() / ".cache" / "kernelwatch" / "spool"


def test_backoff_doubles_with_jitter_up_to_the_cap() -> None:
    backoff = Backoff(1.0, 300.0, rng=random.Random(1))
    delays = [backoff.next_delay() for _ in range(12)]
    for i, delay in enumerate(delays):
        ceiling = min(300.0, 2.0**i)
        assert ceiling / 2 <= delay <= ceiling
    assert max(delays) <= 300.0 and delays[-1] >= 150.0
    assert len({round(d, 6) for d in delays}) == len(delays)  # jittered, not lockstep
    backoff.reset()
    assert backoff.next_delay() <= 1.0
    with pytest.raises(ValueError):
        Backoff(0)
