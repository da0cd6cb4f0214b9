"""runs analysed after the ingest, not inside it

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-21 02:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import service.models.base

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = {
    "analysed_at": "ix_runs_analysis_pending",
    "change_points_at": "ix_runs_change_points_pending",
}


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        for column in COLUMNS:
            batch_op.add_column(
                sa.Column(column, service.models.base.UTCDateTime(timezone=True), nullable=True)
            )
    # Runs stored before this revision were analysed inside their ingest.
    op.execute(sa.text("UPDATE runs SET analysed_at = received_at, change_points_at = received_at"))
    with op.batch_alter_table("runs", schema=None) as batch_op:
        for column, index in COLUMNS.items():
            pending = sa.text(f"{column} IS NULL")
            batch_op.create_index(
                index, ["id"], unique=False, sqlite_where=pending, postgresql_where=pending
            )


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        for column, index in COLUMNS.items():
            pending = sa.text(f"{column} IS NULL")
            batch_op.drop_index(index, sqlite_where=pending, postgresql_where=pending)
            batch_op.drop_column(column)
