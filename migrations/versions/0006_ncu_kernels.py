"""ncu captures as one row per kernel (metrics and findings as JSON); plain JSON for the large
values that are only stored and read whole (ncu captures, a commit's ancestors)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-21 05:00:00.000000
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# PostgreSQL's json keeps the text as written (jsonb parses it); lz4 compresses several times
# faster than the default pglz. Each value is stored and read whole, nothing queries inside.
WHOLE = {"ncu_kernels": ("metrics", "findings"), "commits": ("ancestors",)}

# Every (workload, kernel) that had a metric or a finding becomes one row; metrics become an
# object by name, findings an array in their stored order. SQLite before 3.44 cannot order
# inside an aggregate, so there the rows are folded here, a batch of workloads at a time.
_KEYS = "SELECT run_workload_id, kernel FROM ncu_metrics UNION SELECT run_workload_id, kernel FROM ncu_findings"  # noqa: E501
_PG_FOLD = (
    "INSERT INTO ncu_kernels (run_workload_id, kernel, metrics, findings) "
    "SELECT k.run_workload_id, k.kernel, "
    "coalesce((SELECT json_object_agg(m.name, json_build_object('value', m.value, 'unit', "
    "m.unit)) FROM ncu_metrics m WHERE m.run_workload_id = k.run_workload_id "
    "AND m.kernel = k.kernel), '{}'::json), "
    "coalesce((SELECT json_agg(json_build_object('rule', f.rule, 'type', f.type, "
    "'description', f.description, 'estimated_speedup', f.estimated_speedup, 'speedup_type', "
    "f.speedup_type) ORDER BY f.id) FROM ncu_findings f WHERE f.run_workload_id = "
    f"k.run_workload_id AND f.kernel = k.kernel), '[]'::json) FROM ({_KEYS}) k "
    "ORDER BY k.run_workload_id, k.kernel"
)
_BATCH = 5000


def _fold_in_python(bind: sa.engine.Connection) -> None:
    top = bind.execute(sa.text("SELECT max(id) FROM run_workloads")).scalar() or 0
    for first in range(1, top + 1, _BATCH):
        span = {"a": first, "b": first + _BATCH - 1}
        folded: dict[tuple[int, str], tuple[dict, list]] = {}
        for wl, kernel, name, value, unit in bind.execute(
            sa.text(
                "SELECT run_workload_id, kernel, name, value, unit FROM ncu_metrics "
                "WHERE run_workload_id BETWEEN :a AND :b ORDER BY id"
            ),
            span,
        ):
            folded.setdefault((wl, kernel), ({}, []))[0][name] = {"value": value, "unit": unit}
        for wl, kernel, rule, type_, description, speedup, speedup_type in bind.execute(
            sa.text(
                "SELECT run_workload_id, kernel, rule, type, description, estimated_speedup, "
                "speedup_type FROM ncu_findings WHERE run_workload_id BETWEEN :a AND :b "
                "ORDER BY id"
            ),
            span,
        ):
            folded.setdefault((wl, kernel), ({}, []))[1].append(
                {
                    "rule": rule,
                    "type": type_,
                    "description": description,
                    "estimated_speedup": speedup,
                    "speedup_type": speedup_type,
                }
            )
        if folded:
            bind.execute(
                sa.text(
                    "INSERT INTO ncu_kernels (run_workload_id, kernel, metrics, findings) "
                    "VALUES (:w, :k, :m, :f)"
                ),
                [
                    {"w": wl, "k": kernel, "m": json.dumps(m), "f": json.dumps(f)}
                    for (wl, kernel), (m, f) in sorted(folded.items())
                ],
            )


# And back: one row per metric and per finding.
_UNFOLD = {
    "postgresql": (
        "SELECT k.run_workload_id, k.kernel, e.key, (e.value->>'value')::float, "
        "e.value->>'unit' FROM ncu_kernels k, json_each(k.metrics) e ORDER BY k.id",
        "SELECT k.run_workload_id, k.kernel, e.value->>'rule', e.value->>'type', "
        "e.value->>'description', (e.value->>'estimated_speedup')::float, "
        "e.value->>'speedup_type' FROM ncu_kernels k, json_array_elements(k.findings) "
        "WITH ORDINALITY e(value, n) ORDER BY k.id, e.n",
    ),
    "sqlite": (
        "SELECT k.run_workload_id, k.kernel, e.key, json_extract(e.value, '$.value'), "
        "json_extract(e.value, '$.unit') FROM ncu_kernels k, json_each(k.metrics) e "
        "ORDER BY k.id",
        "SELECT k.run_workload_id, k.kernel, json_extract(e.value, '$.rule'), "
        "json_extract(e.value, '$.type'), json_extract(e.value, '$.description'), "
        "json_extract(e.value, '$.estimated_speedup'), json_extract(e.value, '$.speedup_type') "
        "FROM ncu_kernels k, json_each(k.findings) e ORDER BY k.id, e.key",
    ),
}


def _kernel_table() -> None:
    op.create_table(
        "ncu_kernels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_workload_id", sa.Integer(), nullable=False),
        sa.Column("kernel", sa.String(length=1000), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("findings", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_workload_id"],
            ["run_workloads.id"],
            name=op.f("fk_ncu_kernels_run_workload_id_run_workloads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ncu_kernels")),
    )


def _row_tables() -> None:
    op.create_table(
        "ncu_findings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_workload_id", sa.Integer(), nullable=False),
        sa.Column("kernel", sa.String(length=1000), nullable=False),
        sa.Column("rule", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=20), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("estimated_speedup", sa.Float(), nullable=True),
        sa.Column("speedup_type", sa.String(length=20), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_workload_id"],
            ["run_workloads.id"],
            name=op.f("fk_ncu_findings_run_workload_id_run_workloads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ncu_findings")),
    )
    op.create_table(
        "ncu_metrics",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_workload_id", sa.Integer(), nullable=False),
        sa.Column("kernel", sa.String(length=1000), nullable=False),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("unit", sa.String(length=50), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_workload_id"],
            ["run_workloads.id"],
            name=op.f("fk_ncu_metrics_run_workload_id_run_workloads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ncu_metrics")),
    )


def upgrade() -> None:
    _kernel_table()
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute(_PG_FOLD)
    else:
        _fold_in_python(bind)
    # Created after the copy: one sort instead of an index update per row.
    with op.batch_alter_table("ncu_kernels", schema=None) as batch_op:
        batch_op.create_index("ix_ncu_kernels_run_workload_id", ["run_workload_id"], unique=False)
    for table in ("ncu_metrics", "ncu_findings"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(f"ix_{table}_run_workload_id")
        op.drop_table(table)
    if bind.dialect.name == "postgresql":
        op.execute("ALTER TABLE commits ALTER COLUMN ancestors TYPE json USING ancestors::json")
        _compress(bind, "lz4")
        # Without statistics the planner takes the new table for empty until autovacuum comes
        # round: a commit's metrics read it by sequential scan (measured: p95 50 -> 254 ms).
        op.execute("ANALYZE ncu_kernels")


def _compress(bind: sa.engine.Connection, method: str) -> None:
    """Compress the whole-JSON columns with `method` where the server was built with it."""
    offered = bind.execute(
        sa.text(
            "SELECT :m = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        ),
        {"m": method},
    ).scalar()
    if not offered:
        return
    for table, columns in WHOLE.items():
        changes = ", ".join(f"ALTER COLUMN {c} SET COMPRESSION {method}" for c in columns)
        op.execute(f"ALTER TABLE {table} {changes}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE commits ALTER COLUMN ancestors SET COMPRESSION default")
        op.execute("ALTER TABLE commits ALTER COLUMN ancestors TYPE jsonb USING ancestors::jsonb")
    _row_tables()
    metrics, findings = _UNFOLD[op.get_bind().dialect.name]
    op.execute(f"INSERT INTO ncu_metrics (run_workload_id, kernel, name, value, unit) {metrics}")
    op.execute(
        "INSERT INTO ncu_findings (run_workload_id, kernel, rule, type, description, "
        f"estimated_speedup, speedup_type) {findings}"
    )
    for table in ("ncu_metrics", "ncu_findings"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_index(f"ix_{table}_run_workload_id", ["run_workload_id"], unique=False)
    with op.batch_alter_table("ncu_kernels", schema=None) as batch_op:
        batch_op.drop_index("ix_ncu_kernels_run_workload_id")
    op.drop_table("ncu_kernels")
