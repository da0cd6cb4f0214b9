"""What survived: the database read back, the spools looked into, the table that judges it."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Survey:
    """The database after the storm."""

    jobs: Counter[str]
    attempts: Counter[int]
    runs: int
    runs_per_job: Counter[int]  # how many jobs have n runs
    shapes: Counter[tuple[int, int, int]]  # (workloads, build rows, results) per run
    unanalysed: int
    run_ids: set[str]
    integrity: str


def survey(db_url: str) -> Survey:
    from sqlalchemy import func, select, text

    from service.core.db import create_db_engine
    from service.models import BuildResource, Job, Result, Run, RunWorkload

    engine = create_db_engine(db_url)
    try:
        with engine.connect() as conn:
            jobs = Counter(
                dict(conn.execute(select(Job.state, func.count()).group_by(Job.state)).all())
            )
            attempts = Counter(
                dict(conn.execute(select(Job.attempt, func.count()).group_by(Job.attempt)).all())
            )
            per_job = Counter(
                n
                for (n,) in conn.execute(
                    select(func.count()).where(Run.job_id.is_not(None)).group_by(Run.job_id)
                )
            )

            def counts(model: Any) -> dict[int, int]:
                return dict(
                    conn.execute(select(model.run_id, func.count()).group_by(model.run_id)).all()
                )

            workloads, build, results = counts(RunWorkload), counts(BuildResource), counts(Result)
            runs = dict(conn.execute(select(Run.id, Run.run_uuid)).all())
            shapes = Counter(
                (workloads.get(pk, 0), build.get(pk, 0), results.get(pk, 0)) for pk in runs
            )
            unanalysed = conn.execute(
                select(func.count()).where(
                    (Run.analysed_at.is_(None)) | (Run.change_points_at.is_(None))
                )
            ).scalar_one()
            integrity = "n/a"
            if engine.dialect.name == "sqlite":
                integrity = conn.execute(text("PRAGMA integrity_check")).scalar_one()
    finally:
        engine.dispose()
    return Survey(
        jobs, attempts, len(runs), per_job, shapes, unanalysed, set(runs.values()), integrity
    )


def backlog_empty(db_url: str) -> bool:
    return survey(db_url).unanalysed == 0


@dataclass
class Row:
    """One line of a printed table: what was tried, what survived."""

    what: str
    tried: str
    survived: str
    ok: bool


@dataclass
class Report:
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, what: str, tried: object, survived: object, ok: bool) -> None:
        self.rows.append(Row(what, str(tried), str(survived), ok))

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def table(self) -> str:
        lines = [
            f"### {self.title}",
            "",
            "| check | tried | survived | |",
            "| --- | --- | --- | --- |",
        ]
        lines += [
            f"| {r.what} | {r.tried} | {r.survived} | {'PASS' if r.ok else 'FAIL'} |"
            for r in self.rows
        ]
        return "\n".join([*lines, "", *self.notes])


def spool_state(spools: list[Path]) -> tuple[int, int, int]:
    """(documents waiting, rejected, dropped for a lost lease) over the agents' spools."""
    waiting = sum(len(list(s.glob("*.json"))) for s in spools if s.is_dir())
    rejected = sum(len(list((s / "rejected").glob("*.json"))) for s in spools if s.is_dir())
    dropped = 0
    for s in spools:
        with contextlib.suppress(FileNotFoundError):
            dropped += len((s / "discarded.log").read_text().splitlines())
    return waiting, rejected, dropped


def discarded_run_ids(spool: Path) -> set[str]:
    with contextlib.suppress(FileNotFoundError):
        lines = (spool / "discarded.log").read_text().splitlines()
        return {json.loads(line)["run_id"] for line in lines}
    return set()


def judge_jobs(report: Report, found: Survey, jobs: int) -> None:
    report.add(
        "jobs ended succeeded",
        jobs,
        f"{found.jobs.get('succeeded', 0)} succeeded, "
        f"{sum(v for k, v in found.jobs.items() if k != 'succeeded')} other",
        found.jobs == Counter({"succeeded": jobs}),
    )
    report.add(
        "job runs stored once",
        jobs,
        ", ".join(f"{n} job(s) with {k} run(s)" for k, n in sorted(found.runs_per_job.items())),
        found.runs_per_job == Counter({1: jobs}),
    )


def judge_runs(report: Report, found: Survey, shape: tuple[int, int, int] | None) -> None:
    complete = found.shapes.get(shape, 0) if shape else 0
    report.add(
        "runs stored whole (workloads, build rows, results)",
        found.runs,
        f"{complete} whole {shape}, {found.runs - complete} partial",
        found.runs > 0 and complete == found.runs,
    )


def judge_end(report: Report, found: Survey) -> None:
    """The analysis backlog worked off; claims per job and the SQLite integrity check as notes."""
    report.add(
        "analysis backlog at the end",
        found.runs,
        f"{found.unanalysed} unanalysed",
        found.unanalysed == 0,
    )
    report.notes.append(
        f"claims per job: {dict(sorted(found.attempts.items()))}; "
        f"SQLite integrity_check: {found.integrity}"
    )


def spooled(spool: Path) -> list[str]:
    return [p.stem for p in spool.glob("*.json")] if spool.is_dir() else []
