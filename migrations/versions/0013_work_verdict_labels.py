"""work verdicts: the counter's label as the runner sent it with the capture

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 19:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("work_verdicts") as batch:
        batch.add_column(
            sa.Column("label", sa.String(length=200), server_default="", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("work_verdicts") as batch:
        batch.drop_column("label")
