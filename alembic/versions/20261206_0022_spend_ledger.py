"""The spend ledger (holds of estimated cost taken at admission, and the stateless calls' settled cost)
and each agent's USD budgets per day and month (ADR 0085).

Revision ID: 0022_spend_ledger
Revises: 0021_run_key
Create Date: 2026-12-06 16:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0022_spend_ledger"
down_revision: str | None = "0021_run_key"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WHEN = advanced_alchemy.types.datetime.DateTimeUTC(timezone=True)
_GUID = advanced_alchemy.types.guid.GUID(length=16)


def upgrade() -> None:
    op.create_table(
        "spend_ledger",
        sa.Column("id", _GUID, nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("owner_id", sa.String(length=200), nullable=False),
        sa.Column("key_id", sa.String(length=64), nullable=True),
        sa.Column("agent_id", _GUID, nullable=True),
        sa.Column("surface", sa.String(length=32), nullable=False),
        sa.Column("model_ref", sa.String(length=200), nullable=True),
        sa.Column("reserved_usd", sa.Float(), nullable=False),
        sa.Column("held_until", _WHEN, nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.Column("updated_at", _WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_spend_ledger")),
    )
    with op.batch_alter_table("spend_ledger") as batch:
        batch.create_index("ix_spend_ledger_owner_id_created_at", ["owner_id", "created_at"], unique=False)
        batch.create_index("ix_spend_ledger_key_id_created_at", ["key_id", "created_at"], unique=False)
        batch.create_index("ix_spend_ledger_agent_id_created_at", ["agent_id", "created_at"], unique=False)
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("budget_day_usd", sa.Float(), nullable=True))
        batch.add_column(sa.Column("budget_month_usd", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("budget_month_usd")
        batch.drop_column("budget_day_usd")
    op.drop_table("spend_ledger")
