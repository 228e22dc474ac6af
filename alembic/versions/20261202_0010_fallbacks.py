"""Model fallbacks and retries: ``models.fallbacks`` (refs a run moves to, in order, when the model fails
before any content), ``models.retry_attempts`` and ``models.retry_backoff_seconds`` (``NULL`` follows the
settings), and ``model_cooldowns``, the recent retryable failures of each model, which every process
reads to skip a model that keeps failing.

Revision ID: 0010_fallbacks
Revises: 0009_branches_search
Create Date: 2026-12-02 05:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0010_fallbacks"
down_revision: str | None = "0009_branches_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMN on both engines: no batch copy, so nothing of ``models`` is recreated.
    op.add_column(
        "models",
        sa.Column("fallbacks", advanced_alchemy.types.JsonB, server_default=sa.text("'[]'"), nullable=False),
    )
    op.add_column("models", sa.Column("retry_attempts", sa.Integer(), nullable=True))
    op.add_column("models", sa.Column("retry_backoff_seconds", sa.Float(), nullable=True))
    op.create_table(
        "model_cooldowns",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("model_ref", sa.String(length=270), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.Float(), nullable=False),
        sa.Column("cooled_until", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_cooldowns")),
        sa.UniqueConstraint("model_ref", name=op.f("uq_model_cooldowns_model_ref")),
    )


def downgrade() -> None:
    op.drop_table("model_cooldowns")
    with op.batch_alter_table("models") as batch:
        batch.drop_column("retry_backoff_seconds")
        batch.drop_column("retry_attempts")
        batch.drop_column("fallbacks")
