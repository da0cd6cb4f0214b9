"""A recorded GPU history judged again by the service's current analysis: the same measurements,
today's rules, the same table (benchmarks/history_table) beside the truth.

    python -m benchmarks.history_replay DIR [--truth TRUTH.json] [--out REPLAYED.json]

DIR holds what `python -m benchmarks.history_gpu --out DIR` kept: history.json and
kernelwatch.db (its SQLite database), either of them gzipped (benchmarks/results/history_h200_*
keep two H200 recordings so). A copy of the database is brought to the current schema,
every verdict, work verdict and alert in it is dropped, and every run is decided again, in
ancestry order, by the backlog worker's own code (service.evaluation.backlog): a rule changed
since the recording is measured on the very runs that were judged by the old one. Captures
recorded before the runner sent what determined them (runner.profile.reuse) get it from the
history itself: the benchmark knows which commit changed which kernel (history.json's extras and
wander settings), and each was profiled at its own commit (the recording reuses no section).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.history_gpu import WANDER_SERIES, _load, rows  # noqa: E402
from benchmarks.history_table import render  # noqa: E402

DROPPED = ("verdicts", "work_verdicts", "alert_events", "notifications", "alerts")


def _version(commit: dict[str, Any], workload: str, params_key: str) -> str:
    """What the commit's code of this workload's kernels was (its injection)."""
    if workload == "stream":
        w = json.loads(params_key)["w"]
        return str(commit["extras"].get(str(w), commit["extras"].get(w, 0.0)))
    setting = next(k for k, wid in WANDER_SERIES.items() if wid.startswith(f"{workload}["))
    return str(commit.get("wander", {}).get(setting, 0))


def prepare(db: Path, commits: list[dict[str, Any]]) -> None:
    """Drop every decision in `db` and stamp the captures that lack their determinants."""
    by_sha = {c["sha"]: c for c in commits}
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        for table in DROPPED:
            conn.execute(f"DELETE FROM {table}")
        conn.execute("UPDATE runs SET analysed_at = NULL, change_points_at = NULL")
        conn.execute("DELETE FROM change_points")
        captures = conn.execute(
            "SELECT k.id, c.sha, w.name, w.params_key, k.kernel FROM ncu_kernels k "
            "JOIN run_workloads w ON w.id = k.run_workload_id JOIN runs r ON r.id = w.run_id "
            "JOIN commits c ON c.id = r.commit_id WHERE k.determinants IS NULL"
        ).fetchall()
        for kernel_id, sha, workload, params_key, kernel in captures:
            if sha not in by_sha:
                continue
            code = _version(by_sha[sha], workload, params_key)
            key = hashlib.sha256(f"{workload}:{params_key}:{kernel}:{code}".encode()).hexdigest()
            conn.execute(
                "UPDATE ncu_kernels SET determinants = ?, profiled_at = ? WHERE id = ?",
                (key, sha, kernel_id),
            )


def _either(path: Path) -> Path:
    """`path`, or its gzipped copy where only that exists."""
    zipped = path.with_name(path.name + ".gz")
    return zipped if not path.exists() and zipped.exists() else path


def rejudge(recorded: Path, db: Path, commits: list[dict[str, Any]]) -> Any:
    """A copy at `db` of the recorded database (gzipped or not), at the current schema, every
    run decided again by the backlog worker's code; its engine."""
    from service.core.db import create_db_engine, session_factory
    from service.core.migrate import upgrade
    from service.evaluation.backlog import process_pending

    if recorded.suffix == ".gz":
        db.write_bytes(gzip.decompress(recorded.read_bytes()))
    else:
        shutil.copy(recorded, db)
    engine = create_db_engine(f"sqlite:///{db}")
    upgrade(engine)
    prepare(db, commits)
    factory = session_factory(engine)
    while process_pending(factory).analysed:
        pass
    return engine


def replay(folder: Path) -> dict[str, Any]:
    """The history of `folder` with every commit's metrics as the current analysis decides."""
    from sqlalchemy import select

    from service.core.db import session_factory
    from service.evaluation.reads.commit_metrics import commit_metrics_data
    from service.models import Alert, Commit, Series
    from service.store.history.commits import resolve_commit

    saved = _load(_either(folder / "history.json"))
    work = Path(tempfile.mkdtemp(prefix="kw-replay-"))
    engine = rejudge(_either(folder / "kernelwatch.db"), work / "kernelwatch.db", saved["commits"])
    factory = session_factory(engine)
    reported = {}
    with factory() as session:
        for commit in saved["commits"]:
            if commit["sha"] not in saved["reported"]:
                continue
            found, repository = resolve_commit(session, commit["sha"], None)
            reported[commit["sha"]] = json.loads(
                json.dumps(commit_metrics_data(session, found, repository, None), default=str)
            )
        alerts = [
            {"state": state, "commit": sha, "series": {"workload": workload, "params": params}}
            for state, sha, workload, params in session.execute(
                select(Alert.state, Commit.sha, Series.workload, Series.params)
                .join(Commit, Commit.id == Alert.commit_id)
                .join(Series, Series.id == Alert.series_id)
            )
        ]
    engine.dispose()
    shutil.rmtree(work, ignore_errors=True)
    return {**saved, "reported": reported, "at_push": {}, "alerts": alerts}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", type=Path, help="what history_gpu --out kept")
    p.add_argument("--truth", type=Path, help="the truth of a history_gpu --truth-only run")
    p.add_argument("--out", type=Path, help="write the replayed history here (json)")
    args = p.parse_args(argv)
    replayed = replay(args.folder)
    if args.truth:
        replayed.pop("truth", None)
        replayed.update(_load(args.truth))
    if args.out:
        args.out.write_text(json.dumps(replayed))
    table = render(rows(replayed))
    print(table)
    return 0 if "FAIL" not in table else 1


if __name__ == "__main__":
    sys.exit(main())
