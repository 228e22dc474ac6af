"""``model_cooldowns.last_code``: the run-error code of a model's latest retryable failure
(``provider_rate_limit``, ``provider_unavailable``, ``provider_timeout``), so that
``GET /api/models/cooldowns`` can say why a model is cooling down. Rows from before have none.

Revision ID: 0015_cooldown_last_code
Revises: 0014_catalogue_generation
Create Date: 2026-12-02 15:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0015_cooldown_last_code"
down_revision: str | None = "0014_catalogue_generation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("model_cooldowns", sa.Column("last_code", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("model_cooldowns") as batch:  # SQLite recreates the table (no triggers on it)
        batch.drop_column("last_code")
