"""what a runner reports about itself kept apart from the labels its token was given: the
token's labels bound what it may claim, its reports only narrow that

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28 21:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("runners") as batch:
        batch.add_column(sa.Column("reported_labels", JSON, server_default="{}", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("runners") as batch:
        batch.drop_column("reported_labels")
