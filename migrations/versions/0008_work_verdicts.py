"""work verdicts: a kernel's ncu work counters against the previous run along the branch, and
a run's policy for them (runs.work_changes: notice or fail)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 02:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "work_verdicts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_workload_id", sa.Integer(), nullable=False),
        sa.Column("kernel", sa.String(length=1000), nullable=False),
        sa.Column("counter", sa.String(length=300), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("base_value", sa.Float(), nullable=True),
        sa.Column("base_run_id", sa.Integer(), nullable=True),
        sa.Column("change", sa.Float(), nullable=True),
        sa.Column("verdict", sa.String(length=20), nullable=False),
        sa.ForeignKeyConstraint(
            ["base_run_id"],
            ["runs.id"],
            name=op.f("fk_work_verdicts_base_run_id_runs"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["run_workload_id"],
            ["run_workloads.id"],
            name=op.f("fk_work_verdicts_run_workload_id_run_workloads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_work_verdicts")),
    )
    with op.batch_alter_table("work_verdicts", schema=None) as batch_op:
        batch_op.create_index("ix_work_verdicts_run_workload_id", ["run_workload_id"], unique=False)
    op.add_column(  # not a batch either: SQLite adds a column in place
        "runs",
        sa.Column("work_changes", sa.String(length=10), nullable=False, server_default="notice"),
    )


def downgrade() -> None:
    # Not a batch: on SQLite that recreates `runs`, and dropping the old table would cascade
    # to every row that refers to a run. SQLite (3.35+) and PostgreSQL both drop a column.
    op.execute("ALTER TABLE runs DROP COLUMN work_changes")
    with op.batch_alter_table("work_verdicts", schema=None) as batch_op:
        batch_op.drop_index("ix_work_verdicts_run_workload_id")
    op.drop_table("work_verdicts")
