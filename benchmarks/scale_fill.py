"""Data for benchmarks/service_scale.py: a bulk fill that bypasses the ORM, and result documents.

The fill writes one repository, a first-parent chain of commits on `main` (each with the
first-parent ancestors the runner sends), one run per commit and, per run and series, one
run_workload (with correctness, its kernels' ncu captures and their work verdicts), one result
(raw samples packed as the service packs them) and its verdict with its baseline segment; change
points where a series' level steps. How long the ancestry, how many ncu values and findings per
kernel, how many kernels per workload: benchmarks/scale_shape.py's Shape, real by default. SQLite
gets executemany in big transactions, PostgreSQL gets COPY; both skip foreign-key checks while
loading generated, consistent rows. Columns the fill does not name get their model defaults.
Values come from numpy, vectorised per chunk of commits.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import repeat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from sqlalchemy import Engine, insert, text
from sqlalchemy.exc import DBAPIError

from benchmarks.scale_shape import NcuRows, Shape, segment_columns
from service.models import Base, Commit, Repository, Runner, Series
from service.schemas.document import CommitIn, params_key
from service.store.history.samples import pack_samples, summarize
from service.store.history.workload_rows import series_identity

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "result-document.example.json"
REPOSITORY, SUITE, BRANCH, FINGERPRINT = "acme/fused-kernels", "kernels", "main", "5d1f0a9c7b3e2d4f"
BASE_TIME = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
FAMILIES = [  # (workload, kernel, base duration in us)
    ("gemm_fwd", "gemm_bias_act_f32", 60.0),
    ("gemm_bwd", "gemm_bwd_f32", 120.0),
    ("softmax", "softmax_online_f32", 9.0),
    ("layernorm", "layernorm_welford_f32", 14.0),
    ("attention_fwd", "flash_attn_fwd_f16", 310.0),
    ("adamw", "adamw_multi_tensor", 70.0),
    ("reduce_sum", "reduce_sum_f32", 6.0),
    ("transpose", "transpose_tiled_f32", 22.0),
    ("conv2d", "conv2d_implicit_gemm_f16", 540.0),
    ("train_step", "train_step", 612.0),
]
BASELINE_K = 8  # results a verdict compares against


@dataclass(frozen=True)
class SeriesSpec:
    id: int
    workload: str
    params: dict[str, Any]
    kernel: str
    base_us: float


def series_specs(count: int) -> list[SeriesSpec]:
    specs = []
    for i in range(count):
        workload, kernel, base = FAMILIES[i % len(FAMILIES)]
        size = 256 * (1 + i // len(FAMILIES))
        specs.append(SeriesSpec(i + 1, workload, {"n": size, "dtype": "fp32"}, kernel, base))
    return specs


def commit_sha(index: int) -> str:
    return hashlib.sha1(f"kernelwatch-bench-{index}".encode()).hexdigest()


def ancestors(index: int, count: int = Shape.ancestors) -> list[str]:
    """First-parent ancestors of commit `index`, nearest first, as the runner reads them."""
    return [commit_sha(i) for i in range(index - 1, max(-1, index - 1 - count), -1)]


def commit_time(index: int) -> datetime:
    return BASE_TIME + timedelta(minutes=30 * index)


def _sample_layout(samples: int) -> list[int]:
    return [len(a) for a in np.array_split(np.arange(samples), 3 if samples >= 3 else 1)]


class _Writer:
    """executemany on SQLite, COPY on PostgreSQL; columns given as lists or repeated constants."""

    def __init__(self, engine: Engine, to_db: Callable[[datetime], Any]) -> None:
        self.pg = engine.dialect.name == "postgresql"
        self.to_db = to_db
        self.raw = engine.raw_connection()
        self.dbapi: Any = self.raw.driver_connection
        # Generated rows are consistent: skip the per-row foreign-key checks while loading.
        self._set("SET session_replication_role = replica", "PRAGMA foreign_keys=OFF")
        self.rows = 0

    def _set(self, pg: str, sqlite: str) -> None:
        self.dbapi.cursor().execute(pg if self.pg else sqlite)
        self.dbapi.commit()

    def _defaults(self, table: str, columns: dict[str, Any]) -> dict[str, Any]:
        """Model defaults for NOT NULL columns the fill does not name (the schema moves on)."""
        out = dict(columns)
        for col in Base.metadata.tables[table].columns:
            if col.name in out or col.nullable or col.primary_key or col.server_default:
                continue
            if col.default is None or not (col.default.is_scalar or col.default.is_callable):
                raise RuntimeError(f"the fill sets no value for {table}.{col.name}")
            value = col.default.arg(None) if col.default.is_callable else col.default.arg
            if isinstance(value, datetime):
                value = self.to_db(value)
            out[col.name] = json.dumps(value) if isinstance(value, dict | list) else value
        return out

    def write(self, table: str, n: int, columns: dict[str, Any]) -> None:
        columns = self._defaults(table, columns)
        values = [v if isinstance(v, list | range) else repeat(v, n) for v in columns.values()]
        rows = zip(*values, strict=True)
        names = ",".join(columns)
        cur = self.dbapi.cursor()
        if self.pg:
            with cur.copy(f"COPY {table} ({names}) FROM STDIN") as cp:
                for row in rows:
                    cp.write_row(row)
        else:
            marks = ",".join("?" * len(columns))
            cur.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)
        self.rows += n

    def close(self) -> None:
        self._set("SET session_replication_role = DEFAULT", "PRAGMA foreign_keys=ON")
        self.raw.close()


def fill(
    engine: Engine,
    *,
    commits: int,
    series: int,
    samples: int,
    seed: int = 1,
    log=print,
    shape: Shape = Shape(),
    statistics: bool = True,
) -> int:
    """Load the database; returns the number of rows written over all tables. Without
    `statistics` PostgreSQL's planner knows the tables as the ingest leaves them where no
    autovacuum has analysed them since (autovacuum off, or behind a fast-growing history)."""
    rng = np.random.default_rng(seed)
    ncu_rows = NcuRows(shape)
    specs = series_specs(series)
    to_db: Callable[[datetime], Any] = Commit.__table__.c.committed_at.type.dialect_impl(
        engine.dialect
    ).bind_processor(engine.dialect) or (lambda v: v)
    times = [to_db(commit_time(i)) for i in range(commits)]
    counts = _sample_layout(samples)
    # Per-series level along history: rare step changes (regressions and fixes), like real code.
    grid = (commits, series)
    steps = np.where(rng.random(grid) < 0.002, rng.normal(0, 0.05, grid), 0)
    base = np.array([s.base_us * (1 + 0.4 * (s.id // len(FAMILIES))) for s in specs])
    level = base * np.cumprod(1 + steps, axis=0)
    sigma = np.where(base < 20, 0.02, np.where(base < 200, 0.004, 0.001))
    keys = [params_key(s.params) for s in specs]
    _small_rows(engine, specs, keys)
    w = _Writer(engine, to_db)
    env = json.dumps(json.loads(EXAMPLE.read_text())["environment"] | {"fingerprint": FINGERPRINT})
    kernels = sorted({k for _, k, _ in FAMILIES})
    chunk = max(1, 50_000 // series)
    started = time.perf_counter()
    for c0 in range(0, commits, chunk):
        c1 = min(commits, c0 + chunk)
        k, n = c1 - c0, (c1 - c0) * series
        cids = list(range(c0 + 1, c1 + 1))
        ctimes = times[c0:c1]
        w.write("commits", k, {
            "id": cids,
            "repository_id": 1,
            "sha": [commit_sha(c - 1) for c in cids],
            "parents": [json.dumps([commit_sha(c - 2)] if c > 1 else []) for c in cids],
            "ancestors": [json.dumps(ancestors(c - 1, shape.ancestors)) for c in cids],
            "author_name": "Ada Lovelace",
            "author_email": "ada@example.com",
            "message": [f"perf: change {c}\n\nWhat changed and why." for c in cids],
            "committed_at": ctimes,
        })  # fmt: skip
        w.write("runs", k, {
            "id": cids,
            "run_uuid": [str(uuid.uuid4()) for _ in cids],
            "document_sha256": [hashlib.sha256(str(c).encode()).hexdigest() for c in cids],
            "repository_id": 1, "commit_id": cids, "runner_id": 1, "job_id": None,
            "suite": SUITE, "branch": BRANCH, "status": "succeeded", "fingerprint": FINGERPRINT,
            "gpu_name": "NVIDIA H100 80GB HBM3", "environment": env,
            "build_status": "ok", "build_seconds": 21.4, "build_log_tail": "", "log_tail": "",
            "started_at": ctimes, "finished_at": ctimes, "received_at": ctimes,
            "analysed_at": ctimes, "change_points_at": ctimes,
        })  # fmt: skip
        nb = k * len(kernels)
        w.write("build_resources", nb, {
            "id": range(c0 * len(kernels) + 1, c1 * len(kernels) + 1),
            "run_id": np.repeat(cids, len(kernels)).tolist(),
            "kernel": kernels * k, "arch": "sm_90", "registers": 96, "shared_bytes": 33792,
            "spill_stores_bytes": 0, "spill_loads_bytes": 0, "compile_seconds": 2.5,
        })  # fmt: skip
        ids = range(c0 * series + 1, c1 * series + 1)
        run_ids = np.repeat(cids, series).tolist()
        sidx = list(range(series)) * k
        of = [specs[s] for s in sidx]
        w.write("run_workloads", n, {
            "id": ids, "run_id": run_ids,
            "name": [s.workload for s in of],
            "params": [json.dumps(s.params) for s in of],
            "params_key": [keys[s] for s in sidx],
            "kernels": [json.dumps(ncu_rows.kernels(s.kernel)) for s in of],
            "status": "ok", "error": "",
            "flops": [s.base_us * 3e7 for s in of], "bytes_moved": [s.base_us * 2e6 for s in of],
            "timeline_source": None, "timeline_note": "", "ncu_status": "ok", "ncu_note": "",
        })  # fmt: skip
        w.write("correctness_outcomes", n, {
            "id": ids, "run_workload_id": ids, "passed": True,
            "error_norm": (rng.random(n) * 5e-6).tolist(), "tolerance": 1e-5,
            "norm": "rel_l2", "precision": "fp32", "unwritten": 0,
        })  # fmt: skip
        # Samples: level x (1 + noise x (per-process offset + per-sample noise)), a few outliers.
        lv = level[c0:c1].reshape(-1)[:, None]
        offsets = np.repeat(rng.normal(0, 0.3, (n, len(counts))), counts, axis=1)
        x = lv * (1 + np.tile(sigma, k)[:, None] * (offsets + rng.standard_normal((n, samples))))
        x[rng.random(x.shape) < 0.01] *= 1.05
        x = np.maximum(x, lv * 0.5)
        q1, med, q3 = np.percentile(x, [25, 50, 75], axis=1)
        ncu_rows.write(w, rng, list(ids), [s.kernel for s in of], med * 1000)
        w.write("results", n, {
            "id": ids, "run_id": run_ids, "run_workload_id": ids,
            "series_id": [s.id for s in of], "commit_id": run_ids, "branch": BRANCH,
            "committed_at": np.repeat(np.array(ctimes, dtype=object), series).tolist(),
            "n": samples, "median": med.tolist(), "q1": q1.tolist(), "q3": q3.tolist(),
            "min": x.min(1).tolist(), "max": x.max(1).tolist(), "mean": x.mean(1).tolist(),
            "stdev": (x.std(1, ddof=1) if samples > 1 else np.zeros(n)).tolist(),
            "samples": [pack_samples(row) for row in x],
            "process_counts": json.dumps(counts), "method": "cuda_events", "sm_clock_mhz": 1980.0,
        })  # fmt: skip
        # One verdict per result, as ingest stores them; a step in the level is a verdict and a
        # change point. The baseline is the previous commits (one run each, all measured).
        prev = level[c0 - 1 : c1 - 1] if c0 else np.vstack([level[:1], level[: c1 - 1]])
        change = (med.reshape(k, series) / prev - 1).reshape(-1)
        step = steps[c0:c1].reshape(-1)
        moved = np.abs(step) > 0.01
        verdict = np.where(moved, np.where(step > 0, "regressed", "improved"), "unchanged")
        first = np.repeat(np.array(cids) == 1, series)
        verdict[first] = "new"
        p_value = np.where(moved, 1e-6, rng.uniform(0.05, 1, n))
        base_ids = [json.dumps(list(range(c - 1, max(0, c - 1 - BASELINE_K), -1))) for c in cids]
        w.write("verdicts", n, {
            "id": ids, "run_id": run_ids, "series_id": [s.id for s in of], "result_id": ids,
            "verdict": verdict.tolist(),
            "change": _unless(first, change),
            "p_value": _unless(first, p_value),
            "q_value": _unless(first, np.minimum(1.0, p_value * 3)),
            "floor": _unless(first, np.tile(np.maximum(3 * sigma, 0.01), k)),
            "baseline_median": _unless(first, prev.reshape(-1)),
            "baseline_results": np.repeat(np.minimum(cids, BASELINE_K + 1) - 1, series).tolist(),
            "baseline_commits": np.repeat(np.array(base_ids, dtype=object), series).tolist(),
            "note": "", "created_at": np.repeat(np.array(ctimes, dtype=object), series).tolist(),
            # A run in ten with a common offset taken out by the unchanged series (controls).
            "run_offset": [0.004 if c % 10 == 0 else None for c in cids for _ in range(series)],
            "offset_controls": [series // 2 if c % 10 == 0 else 0 for c in cids
                                for _ in range(series)],
            **segment_columns(cids, series, lambda c: commit_sha(c - 1)),
        })  # fmt: skip
        at = np.flatnonzero(moved & ~first)
        w.write("change_points", len(at), {
            "id": range(c0 * series + 1, c0 * series + len(at) + 1),
            "series_id": [of[i].id for i in at], "branch": BRANCH,
            "commit_id": [run_ids[i] for i in at],
            "before_median": prev.reshape(-1)[at].tolist(),
            "after_median": med[at].tolist(), "change": step[at].tolist(),
            "detected_at": [ctimes[i // series] for i in at],
        })  # fmt: skip
        w.dbapi.commit()
        rate = c1 * series / (time.perf_counter() - started)
        log(f"  filled {c1}/{commits} commits, {c1 * series:,} results ({rate:,.0f} results/s)")
    w.close()
    _finish(engine, statistics)
    return w.rows + 2 + series


def _small_rows(engine: Engine, specs: list[SeriesSpec], keys: list[str]) -> None:
    """Repository, runner and series through Core: columns added later get their defaults."""
    now = datetime.now(UTC)
    runner = {"name": "h100-a", "host": "gpu-host-01", "labels": {"gpu": "h100"}}
    with engine.begin() as conn:
        conn.execute(insert(Repository), [{"id": 1, "name": REPOSITORY, "created_at": now}])
        conn.execute(insert(Runner), [{"id": 1, **runner, "created_at": now, "last_seen_at": now}])
        rows = [
            {"id": s.id, "identity": _identity(s), "repository_id": 1, "suite": SUITE,
             "workload": s.workload, "params": s.params, "params_key": key, "kernel": s.kernel,
             "metric": "duration", "unit": "us", "method": "cuda_events",
             "fingerprint": FINGERPRINT, "created_at": now}
            for s, key in zip(specs, keys, strict=True)
        ]  # fmt: skip
        conn.execute(insert(Series), rows)


def _unless(mask: np.ndarray, values: np.ndarray) -> list[float | None]:
    return [None if m else v for m, v in zip(mask.tolist(), values.tolist(), strict=True)]


def _identity(s: SeriesSpec) -> str:
    workload = SimpleNamespace(name=s.workload, params=s.params)
    timing = SimpleNamespace(kernel=s.kernel, metric="duration", method="cuda_events")
    return series_identity(1, SUITE, workload, timing, FINGERPRINT)  # type: ignore[arg-type]


def _finish(engine: Engine, statistics: bool = True) -> None:
    """Sequences past the loaded ids; statistics as autovacuum would have them on PostgreSQL
    (or none); the load written out (checkpointed) on both."""
    if engine.dialect.name != "postgresql":
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        return
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        tables = conn.execute(
            text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ).scalars()
        for table in tables:
            if table == "alembic_version":
                continue
            conn.execute(
                text(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT coalesce(max(id), 0) + 1 FROM {table}), false)"
                )
            )
        if statistics:
            conn.exec_driver_sql("VACUUM ANALYZE")
        # As SQLite's WAL is checkpointed above: otherwise the checkpointer writes the load's
        # pages out over the next minutes, beside (and into) the measurements. Needs superuser
        # or pg_checkpoint; without either, the measurements share the box with it.
        with contextlib.suppress(DBAPIError):
            conn.exec_driver_sql("CHECKPOINT")


def result_documents(
    count: int, *, specs: list[SeriesSpec], first: int, workloads: int, samples: int, seed: int
) -> list[bytes]:
    """Whole result documents for commits first, first+1, ... each a child of the one before.

    Each is a suite run of `workloads` workloads of existing series, with 3 processes of timing
    samples, correctness, the example's ncu metrics and findings, and the example's build section.
    """
    rng = np.random.default_rng(seed)
    example = json.loads(EXAMPLE.read_text())
    template_ncu = example["workloads"][0]["ncu"]["kernels"][0]
    chosen = [
        specs[i] for i in np.linspace(0, len(specs) - 1, min(workloads, len(specs))).astype(int)
    ]
    counts = _sample_layout(samples)
    docs = []
    for d in range(count):
        index = first + d
        doc = copy.deepcopy(example)
        doc.update(run_id=str(uuid.uuid4()), job_id=None, lease_token=None, branch=BRANCH)
        doc["repository"] = {"name": REPOSITORY, "url": f"https://github.com/{REPOSITORY}.git"}
        doc["commit"].update(
            sha=commit_sha(index),
            parents=[commit_sha(index - 1)],
            **({"ancestors": ancestors(index)} if "ancestors" in CommitIn.model_fields else {}),
            message=f"perf: change {index + 1}\n\nDetails.",
            committed_at=commit_time(index).isoformat(),
        )
        doc["started_at"] = (commit_time(index) + timedelta(minutes=2)).isoformat()
        doc["finished_at"] = (commit_time(index) + timedelta(minutes=9)).isoformat()
        doc["environment"]["fingerprint"] = FINGERPRINT
        doc["runner"]["name"] = f"h100-{'abcd'[d % 4]}"  # concurrent posts come from 4 runners
        doc["workloads"] = [_workload(s, rng, counts, template_ncu) for s in chosen]
        docs.append(json.dumps(doc).encode())
    return docs


def _workload(s: SeriesSpec, rng: np.random.Generator, counts: list[int], ncu: dict) -> dict:
    base = s.base_us * (1 + 0.4 * (s.id // len(FAMILIES)))
    procs = [
        {"samples": (base * (1 + 0.003 * rng.standard_normal(n))).tolist(), "sm_clock_mhz": 1980.0}
        for n in counts
    ]
    summary = summarize(np.concatenate([p["samples"] for p in procs]))
    kernel_ncu = copy.deepcopy(ncu) | {"kernel": s.kernel}
    kernel_ncu["metrics"]["gpu__time_duration.sum"]["value"] = summary.median * 1000
    return {
        "name": s.workload,
        "params": s.params,
        "kernels": [s.kernel],
        "status": "ok",
        "error": "",
        "correctness": {
            "passed": True,
            "error_norm": float(rng.uniform(1e-8, 5e-6)),
            "tolerance": 1e-5,
            "norm": "rel_l2",
            "precision": "fp32",
            "unwritten": 0,
        },
        "flops": base * 3e7,
        "bytes": base * 2e6,
        "timing": {
            "kernel": s.kernel,
            "metric": "duration",
            "unit": "us",
            "method": "cuda_events",
            "l2_flushed": True,
            "processes": procs,
            "n": summary.n,
            "median": summary.median,
            "min": summary.min,
            "max": summary.max,
            "mean": summary.mean,
        },
        "timeline": None,
        "ncu": {"status": "ok", "reason": "", "kernels": [kernel_ncu]},
    }
