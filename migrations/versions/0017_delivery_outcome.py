"""a delivery keeps what was done with it (queued, ignored, done), not the HTTP status it was
answered with: the API decides that

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29 00:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DELIVERIES = sa.table(
    "webhook_deliveries",
    sa.column("status_code", sa.Integer),
    sa.column("outcome", sa.String),
    sa.column("job_ids", sa.JSON),
)


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("outcome", sa.String(20), server_default="done", nullable=False))
    # 202 meant jobs queued, or an event that kernelwatch does not act on; 200, done.
    op.execute(
        DELIVERIES.update()
        .where(DELIVERIES.c.status_code == 202)
        .values(
            outcome=sa.case(
                (sa.cast(DELIVERIES.c.job_ids, sa.String) == "[]", "ignored"), else_="queued"
            )
        )
    )
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("status_code")


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("status_code", sa.Integer, server_default="200", nullable=False))
    op.execute(
        DELIVERIES.update()
        .where(DELIVERIES.c.outcome.in_(("queued", "ignored")))
        .values(status_code=202)
    )
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("outcome")
