"""PostgreSQL's planner statistics, kept current by the service where autovacuum does not keep
them (turned off, as on the machines this was measured on, or behind a burst of ingests).

Without statistics the planner takes a table of a million results for a few hundred rows and
plans whole-table scans: the series, compare and trends reads grew 1.3-15x from 200 to 2,000
commits that way (benchmarks/service_flat.py --statistics none). So the analysis worker asks,
at most once a minute, which of the tables the reads join have changed by more than
autovacuum's own default threshold (50 rows and 10% since their last ANALYZE, or never
analysed), and analyses those. On SQLite there is nothing to do: its planner reads the indexes.
"""

from __future__ import annotations

from sqlalchemy import Engine, text

# The tables the reads join, by size: a stale estimate of any of them turns an index lookup
# into a scan.
TABLES = (
    "results", "verdicts", "work_verdicts", "ncu_kernels", "timeline_entries", "run_workloads",
    "correctness_outcomes", "build_resources", "runs", "commits", "series", "change_points",
    "alerts",
)  # fmt: skip
BASE_THRESHOLD = 50  # autovacuum_analyze_threshold's default
SCALE_FACTOR = 0.1  # autovacuum_analyze_scale_factor's default
MIN_ROWS = 1000  # a smaller table is read whole in a page or two, whatever the plan


def stale_tables(engine: Engine, min_rows: int = MIN_ROWS) -> list[str]:
    """The tables of TABLES whose statistics autovacuum's default rule would refresh now."""
    if engine.dialect.name != "postgresql":
        return []
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT relname, n_live_tup, n_mod_since_analyze, "
                "coalesce(last_analyze, last_autoanalyze) IS NULL AS never "
                "FROM pg_stat_user_tables WHERE relname = ANY(:tables)"
            ),
            {"tables": list(TABLES)},
        ).all()
    return stale([tuple(r) for r in rows], min_rows)


def stale(rows: list[tuple[str, int, int, bool]], min_rows: int = MIN_ROWS) -> list[str]:
    """Of (table, live rows, rows changed since its last ANALYZE, never analysed), those that
    autovacuum's default rule would analyse now, big enough to matter."""
    return sorted(
        name
        for name, live, modified, never in rows
        if live + modified >= min_rows
        and (never or modified > BASE_THRESHOLD + SCALE_FACTOR * live)
    )


def analyse(engine: Engine, tables: list[str]) -> None:
    """ANALYZE each table (a sample of its rows; reads and writes go on meanwhile)."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for name in tables:
            if name in TABLES:  # a name of ours, never text from elsewhere
                conn.execute(text(f'ANALYZE "{name}"'))
