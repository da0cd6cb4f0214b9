"""a run's common offset taken out of a verdict's change (service.analysis.run_offset), and how
many unchanged kernels measured it; what a workload chose when it was prepared (an autotuner's
config)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 18:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("run_workloads") as batch:
        batch.add_column(sa.Column("choices", JSON, server_default="{}", nullable=False))
    with op.batch_alter_table("verdicts") as batch:
        batch.add_column(sa.Column("run_offset", sa.Float(), nullable=True))
        batch.add_column(
            sa.Column("offset_controls", sa.Integer(), server_default="0", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("verdicts") as batch:
        batch.drop_column("offset_controls")
        batch.drop_column("run_offset")
    # Not in a batch: on SQLite a batch copies the table, and dropping the old copy would take
    # every row that references a run workload with it (ALTER TABLE ... DROP COLUMN does not).
    op.drop_column("run_workloads", "choices")
