"""A catalogue generation: one counter that every write to ``models``, ``agents`` or ``agent_versions``
bumps, by triggers, in the writing transaction.

Each process caches the catalogue (``app/catalogue/cache.py``) and reads the counter in a run's first
intake statement; a different value than its cache's means another process (or this one, or a
migration, or an operator's SQL) changed the catalogue, and the cache is read again. Triggers, not the
application, bump it, so no write path can be missed. SQLite drops a table's triggers when a batch
migration recreates the table: a later migration that recreates ``models``, ``agents`` or
``agent_versions`` there must create the triggers below again (``create_sqlite_triggers``).

Revision ID: 0014_catalogue_generation
Revises: 0013_multimodal_default
Create Date: 2026-12-02 08:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0014_catalogue_generation"
down_revision: str | None = "0013_multimodal_default"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("models", "agents", "agent_versions")
_BUMP = "UPDATE catalogue_generation SET generation = generation + 1 WHERE id = 1"
_PG_FUNCTION = f"""CREATE FUNCTION iris_catalogue_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  {_BUMP};
  RETURN NULL;
END $$"""


def create_sqlite_triggers() -> None:
    """One trigger per table and kind of write (SQLite has no ``INSERT OR UPDATE OR DELETE`` trigger)."""
    for table in TABLES:
        for action in ("INSERT", "UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER {table}_{action.lower()}_catalogue AFTER {action} ON {table} "
                f"BEGIN {_BUMP}; END"
            )


def upgrade() -> None:
    op.create_table(
        "catalogue_generation",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_catalogue_generation")),
    )
    op.execute("INSERT INTO catalogue_generation (id, generation) VALUES (1, 1)")
    if op.get_bind().dialect.name == "sqlite":
        create_sqlite_triggers()
        return
    op.execute(_PG_FUNCTION)
    for table in TABLES:
        # Per statement: a bulk write bumps it once; TRUNCATE too (row triggers never see it).
        op.execute(
            f"CREATE TRIGGER {table}_catalogue AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION iris_catalogue_changed()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in TABLES:
            for action in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER IF EXISTS {table}_{action}_catalogue")
    else:
        for table in TABLES:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_catalogue ON {table}")
        op.execute("DROP FUNCTION IF EXISTS iris_catalogue_changed()")
    op.drop_table("catalogue_generation")
