"""a run's common offset taken out of a verdict's change (service.analysis.run_offset), and how
many unchanged kernels measured it

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 18:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("verdicts") as batch:
        batch.add_column(sa.Column("run_offset", sa.Float(), nullable=True))
        batch.add_column(
            sa.Column("offset_controls", sa.Integer(), server_default="0", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("verdicts") as batch:
        batch.drop_column("offset_controls")
        batch.drop_column("run_offset")
