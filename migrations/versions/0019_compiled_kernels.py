"""the kernels a workload's launch ran as their compiler left them (threads, registers, shared
and local memory; a Triton kernel's warps, stages, autotuned config and target); the measures
beside its duration (prepare time, peak memory, numeric error) and their verdicts; a commit's
alerts found by index (those it opened, started by bisection, or fixed)

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07 03:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ALERT_COLUMNS = ("commit_id", "first_bad_commit_id", "fixed_by_commit_id")
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("run_workloads") as batch:
        batch.add_column(sa.Column("compiled", JSON, server_default="[]", nullable=False))
        batch.add_column(sa.Column("measures", JSON, server_default="{}", nullable=False))
    op.create_table(
        "measure_verdicts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_workload_id", sa.Integer(), nullable=False),
        sa.Column("measure", sa.String(length=40), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("base_value", sa.Float(), nullable=True),
        sa.Column("base_run_id", sa.Integer(), nullable=True),
        sa.Column("change", sa.Float(), nullable=True),
        sa.Column("verdict", sa.String(length=20), nullable=False),
        sa.Column("tolerance", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_workload_id"],
            ["run_workloads.id"],
            name=op.f("fk_measure_verdicts_run_workload_id_run_workloads"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["base_run_id"],
            ["runs.id"],
            name=op.f("fk_measure_verdicts_base_run_id_runs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_measure_verdicts")),
    )
    op.create_index("ix_measure_verdicts_run_workload_id", "measure_verdicts", ["run_workload_id"])
    for column in ALERT_COLUMNS:
        op.create_index(f"ix_alerts_{column}", "alerts", [column])


def downgrade() -> None:
    for column in ALERT_COLUMNS:
        op.drop_index(f"ix_alerts_{column}", table_name="alerts")
    op.drop_index("ix_measure_verdicts_run_workload_id", table_name="measure_verdicts")
    op.drop_table("measure_verdicts")
    # Not in a batch: on SQLite a batch copies the table, and dropping the old copy would take
    # every row that references a run workload with it (ALTER TABLE ... DROP COLUMN does not).
    op.drop_column("run_workloads", "measures")
    op.drop_column("run_workloads", "compiled")
