"""runner health: a runner reports that its host cannot run jobs (runners.unhealthy_since,
runners.unhealthy_reason); registering again clears it

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 06:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import service.models.base

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Not batches: SQLite adds a column in place, and recreating `runners` would touch the jobs
    # that refer to it.
    op.add_column(
        "runners",
        sa.Column("unhealthy_since", service.models.base.UTCDateTime(timezone=True), nullable=True),
    )
    op.add_column(
        "runners",
        sa.Column("unhealthy_reason", sa.String(length=2000), nullable=False, server_default=""),
    )


def downgrade() -> None:
    # SQLite (3.35+) and PostgreSQL both drop a column in place.
    op.execute("ALTER TABLE runners DROP COLUMN unhealthy_reason")
    op.execute("ALTER TABLE runners DROP COLUMN unhealthy_since")
