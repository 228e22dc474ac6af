"""The API key that started each run (``runs.key_id``) and each key's USD budgets and tokens per
minute: spend and limits per key.

Revision ID: 0021_run_key
Revises: 0020_audit_detail
Create Date: 2026-12-06 13:55:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021_run_key"
down_revision: str | None = "0020_audit_detail"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("key_id", sa.String(length=64), nullable=True))
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("tokens_per_minute", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("budget_day_usd", sa.Float(), nullable=True))
        batch.add_column(sa.Column("budget_month_usd", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("budget_month_usd")
        batch.drop_column("budget_day_usd")
        batch.drop_column("tokens_per_minute")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("key_id")
