"""commits by time: the trends page reads the change points of its window's commits
(committed_at >= the oldest point shown), which scanned every commit without it

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 08:20:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_commits_committed_at", "commits", ["committed_at"])


def downgrade() -> None:
    op.drop_index("ix_commits_committed_at", table_name="commits")
