"""the kernels a workload's launch ran as their compiler left them (threads, registers, shared
and local memory; a Triton kernel's warps, stages, autotuned config and target)

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

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("run_workloads") as batch:
        batch.add_column(sa.Column("compiled", JSON, server_default="[]", nullable=False))


def downgrade() -> None:
    # Not in a batch: on SQLite a batch copies the table, and dropping the old copy would take
    # every row that references a run workload with it (ALTER TABLE ... DROP COLUMN does not).
    op.drop_column("run_workloads", "compiled")
