"""API keys: long-lived ``iris_sk_…`` keys kept as SHA-256 hashes, with their owner, scopes and last use.

Revision ID: 0018_api_keys
Revises: 0017_gateway_responses
Create Date: 2026-12-06 12:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0018_api_keys"
down_revision: str | None = "0017_gateway_responses"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WHEN = advanced_alchemy.types.datetime.DateTimeUTC(timezone=True)


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("owner_id", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("agents", advanced_alchemy.types.JsonB, nullable=True),
        sa.Column("models", advanced_alchemy.types.JsonB, nullable=True),
        sa.Column("surfaces", advanced_alchemy.types.JsonB, nullable=True),
        sa.Column("requests_per_minute", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("expires_at", _WHEN, nullable=True),
        sa.Column("revoked_at", _WHEN, nullable=True),
        sa.Column("last_used_at", _WHEN, nullable=True),
        sa.Column("last_used_address", sa.String(length=64), nullable=True),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.Column("updated_at", _WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_api_keys_secret_hash")),
    )
    with op.batch_alter_table("api_keys") as batch:
        batch.create_index("ix_api_keys_owner_id", ["owner_id"], unique=False)


def downgrade() -> None:
    op.drop_table("api_keys")
