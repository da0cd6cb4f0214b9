"""a series' doubtful slowdown at a run measured again interleaved (a confirmation job), whose
finding is the series' verdict at that run

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06 21:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from service.models.base import UTCDateTime

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "confirmations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("series_id", sa.Integer(), nullable=False),
        sa.Column("base_series_id", sa.Integer(), nullable=True),
        sa.Column("base_commit_id", sa.Integer(), nullable=True),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("change", sa.Float(), nullable=True),
        sa.Column("p_value", sa.Float(), nullable=True),
        sa.Column("base_median", sa.Float(), nullable=True),
        sa.Column("head_median", sa.Float(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("decided_at", UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["series_id"], ["series.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["base_series_id"], ["series.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["base_commit_id"], ["commits.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "series_id"),
    )
    op.create_index("ix_confirmations_job_id", "confirmations", ["job_id"])


def downgrade() -> None:
    op.drop_index("ix_confirmations_job_id", table_name="confirmations")
    op.drop_table("confirmations")
