"""pull requests: the PRs measured (pull_requests), and a PR run's number, target branch and
merge base on runs

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 14:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from service.models.base import UTCDateTime

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pull_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repository_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("head_sha", sa.String(length=40), nullable=False),
        sa.Column("base_ref", sa.String(length=255), nullable=False),
        sa.Column("comment_id", sa.BigInteger(), nullable=True),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["repository_id"],
            ["repositories.id"],
            name=op.f("fk_pull_requests_repository_id_repositories"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pull_requests")),
        sa.UniqueConstraint(
            "repository_id", "number", name=op.f("uq_pull_requests_repository_id_number")
        ),
    )
    # In place (ADD COLUMN): a batch rebuild of runs would drop the table, and with SQLite's
    # foreign keys on, every row that cascades from a run with it.
    op.add_column("runs", sa.Column("pull_request", sa.Integer(), nullable=True))
    op.add_column("runs", sa.Column("base_ref", sa.String(length=255), nullable=True))
    op.add_column("runs", sa.Column("merge_base_sha", sa.String(length=40), nullable=True))
    waiting = sa.text("merge_base_sha IS NOT NULL")
    op.create_index("ix_runs_merge_base", "runs", ["repository_id", "merge_base_sha"],
                    sqlite_where=waiting, postgresql_where=waiting)  # fmt: skip


def downgrade() -> None:
    op.drop_index("ix_runs_merge_base", table_name="runs")
    # Native DROP COLUMN (SQLite 3.35 and later, PostgreSQL), for the same reason.
    for column in ("merge_base_sha", "base_ref", "pull_request"):
        op.execute(f"ALTER TABLE runs DROP COLUMN {column}")
    op.drop_table("pull_requests")
