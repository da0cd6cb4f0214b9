"""the timing method is part of a series' identity; verdicts say where their baseline's segment
starts and why

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 12:00:00.000000

A series that holds results of several timing methods (the runner used to pick the method at run
time) is split: the method of its first result keeps the series, each other method gets a series
of its own, and its results, their verdicts and the alerts of their runs move there. Change
points of a split series mixed two methods and are dropped (a later run re-segments both).
"""

import hashlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FIELDS = "repository_id, suite, workload, params_key, kernel, metric, fingerprint"
_COPIED = "repository_id, suite, workload, params, params_key, kernel, metric, unit, fingerprint"
_BATCH = 2000


def _identity(row: sa.Row, method: str | None) -> str:
    # The formula of service.store.history.workload_rows.series_identity at this revision (and,
    # without a method, at the one before).
    parts = [str(row.repository_id), row.suite, row.workload, row.params_key, row.kernel]
    parts += [row.metric, row.fingerprint]
    if method is not None:
        parts.append(method)
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _rewrite_identities(bind: sa.engine.Connection, with_method: bool) -> None:
    rows = bind.execute(sa.text(f"SELECT id, {_FIELDS}, method FROM series ORDER BY id")).all()
    # Identities are unique: park every row on a temporary value first, so that a swap of two
    # identities never collides half way.
    bind.execute(sa.text("UPDATE series SET identity = 'tmp-' || CAST(id AS VARCHAR(20))"))
    values = [
        {"id": r.id, "identity": _identity(r, r.method if with_method else None)} for r in rows
    ]
    for i in range(0, len(values), _BATCH):
        bind.execute(
            sa.text("UPDATE series SET identity = :identity WHERE id = :id"),
            values[i : i + _BATCH],
        )


def _split_mixed_series(bind: sa.engine.Connection) -> None:
    methods: dict[int, list[str]] = {}
    for series_id, method, _ in bind.execute(
        sa.text(
            "SELECT series_id, method, min(id) AS first FROM results "
            "GROUP BY series_id, method ORDER BY series_id, first"
        )
    ):
        methods.setdefault(series_id, []).append(method)
    for series_id, found in methods.items():
        first = {"m": found[0], "id": series_id}
        bind.execute(sa.text("UPDATE series SET method = :m WHERE id = :id"), first)
        for method in found[1:]:
            new_id = bind.execute(
                sa.text(
                    f"INSERT INTO series (identity, {_COPIED}, method, created_at) "
                    f"SELECT :identity, {_COPIED}, :m, created_at FROM series WHERE id = :id "
                    "RETURNING id"
                ),
                {"identity": f"split-{series_id}-{method}", "m": method, "id": series_id},
            ).scalar_one()
            moved = {"new": new_id, "old": series_id, "m": method}
            bind.execute(
                sa.text(
                    "UPDATE verdicts SET series_id = :new WHERE series_id = :old AND result_id IN "
                    "(SELECT id FROM results WHERE series_id = :old AND method = :m)"
                ),
                moved,
            )
            bind.execute(
                sa.text(
                    "UPDATE alerts SET series_id = :new WHERE series_id = :old AND run_id IN "
                    "(SELECT run_id FROM results WHERE series_id = :old AND method = :m)"
                ),
                moved,
            )
            bind.execute(
                sa.text(
                    "UPDATE results SET series_id = :new WHERE series_id = :old AND method = :m"
                ),
                moved,
            )
        if len(found) > 1:
            bind.execute(
                sa.text("DELETE FROM change_points WHERE series_id = :id"), {"id": series_id}
            )


def upgrade() -> None:
    with op.batch_alter_table("series", schema=None) as batch_op:
        batch_op.add_column(sa.Column("method", sa.String(length=30), nullable=True))
    bind = op.get_bind()
    _split_mixed_series(bind)
    # A series without results (none are stored so) would be timed by CUDA events.
    bind.execute(sa.text("UPDATE series SET method = 'cuda_events' WHERE method IS NULL"))
    _rewrite_identities(bind, with_method=True)
    with op.batch_alter_table("series", schema=None) as batch_op:
        batch_op.alter_column("method", existing_type=sa.String(length=30), nullable=False)
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("segment_start_commit_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("segment_kind", sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column("segment_results", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("segment_note", sa.Text(), nullable=False, server_default=""))
        batch_op.create_foreign_key(
            batch_op.f("fk_verdicts_segment_start_commit_id_commits"),
            "commits",
            ["segment_start_commit_id"],
            ["id"],
            ondelete="SET NULL",
        )


def _merge_split_series(bind: sa.engine.Connection) -> None:
    """Series that differ only by method become one again (the lowest id keeps them)."""
    groups: dict[tuple, list[int]] = {}
    for row in bind.execute(sa.text(f"SELECT id, {_FIELDS} FROM series ORDER BY id")):
        groups.setdefault(tuple(row[1:]), []).append(row.id)
    for ids in groups.values():
        keep, *others = ids
        for other in others:
            moved = {"keep": keep, "other": other}
            for table in ("results", "verdicts", "alerts"):
                bind.execute(
                    sa.text(f"UPDATE {table} SET series_id = :keep WHERE series_id = :other"), moved
                )
            bind.execute(sa.text("DELETE FROM change_points WHERE series_id = :other"), moved)
            bind.execute(sa.text("DELETE FROM series WHERE id = :other"), moved)


def downgrade() -> None:
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_verdicts_segment_start_commit_id_commits"), type_="foreignkey"
        )
        batch_op.drop_column("segment_note")
        batch_op.drop_column("segment_results")
        batch_op.drop_column("segment_kind")
        batch_op.drop_column("segment_start_commit_id")
    bind = op.get_bind()
    _merge_split_series(bind)
    _rewrite_identities(bind, with_method=False)
    with op.batch_alter_table("series", schema=None) as batch_op:
        batch_op.drop_column("method")
