"""run-to-run wander: a verdict's run that sat off its level (outlier), the series a redefined
workload's first result was compared with; work counters judged
against their own noise: what determined each capture, where it was measured, and the tolerance
and pairs behind each work verdict

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28 16:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("verdicts") as batch:
        batch.add_column(
            sa.Column("outlier", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch.add_column(sa.Column("redefined_from_series_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_verdicts_redefined_from_series_id_series",
            "series",
            ["redefined_from_series_id"],
            ["id"],
            ondelete="SET NULL",
        )
    with op.batch_alter_table("ncu_kernels") as batch:
        batch.add_column(sa.Column("determinants", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("profiled_at", sa.String(length=40), nullable=True))
    with op.batch_alter_table("work_verdicts") as batch:
        batch.add_column(sa.Column("tolerance", sa.Float(), nullable=True))
        batch.add_column(sa.Column("pairs", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("work_verdicts") as batch:
        batch.drop_column("pairs")
        batch.drop_column("tolerance")
    with op.batch_alter_table("ncu_kernels") as batch:
        batch.drop_column("profiled_at")
        batch.drop_column("determinants")
    with op.batch_alter_table("verdicts") as batch:
        batch.drop_constraint("fk_verdicts_redefined_from_series_id_series", type_="foreignkey")
        batch.drop_column("redefined_from_series_id")
        batch.drop_column("outlier")
