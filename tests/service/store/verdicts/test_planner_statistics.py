"""The planner's statistics the analysis worker keeps current on PostgreSQL."""

from __future__ import annotations

from sqlalchemy import Engine, text

from service.store.verdicts.planner_statistics import MIN_ROWS, analyse, stale, stale_tables


def test_a_table_is_stale_by_autovacuums_own_rule_and_only_when_big_enough() -> None:
    rows = [
        ("results", 1_000_000, 100_051, False),  # 50 + 10% of a million: one more than that
        ("verdicts", 1_000_000, 100_050, False),  # exactly the threshold: not yet
        ("series", 5_000, 0, True),  # never analysed
        ("alerts", 20, 0, True),  # never analysed, but a page or two: read whole anyway
    ]
    assert stale(rows) == ["results", "series"]
    assert stale(rows, min_rows=1) == ["alerts", "results", "series"]


def test_postgresql_tables_get_analysed_and_sqlite_needs_nothing(engine: Engine) -> None:
    if engine.dialect.name != "postgresql":
        assert stale_tables(engine, min_rows=0) == []
        return
    analyse(engine, ["results", "pg_class; DROP TABLE runs"])  # a name not of ours: ignored
    with engine.connect() as conn:
        analysed = conn.execute(
            text("SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = :t"),
            {"t": "results"},
        ).scalar()
    assert analysed is True
    assert "results" not in stale_tables(engine, min_rows=MIN_ROWS)
