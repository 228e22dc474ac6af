"""Stored answers of the Responses API (``POST /v1/responses`` with ``store``): one row per response.

Revision ID: 0017_gateway_responses
Revises: 0016_search_index_in_batches
Create Date: 2026-12-06 12:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0017_gateway_responses"
down_revision: str | None = "0016_search_index_in_batches"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "gateway_responses",
        sa.Column("id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("owner_id", sa.String(length=128), nullable=False),
        sa.Column("previous_id", advanced_alchemy.types.guid.GUID(length=16), nullable=True),
        sa.Column("model_ref", sa.String(length=270), nullable=False),
        sa.Column("body", advanced_alchemy.types.JsonB, nullable=False),
        sa.Column("input_items", advanced_alchemy.types.JsonB, nullable=False),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column("created_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False),
        sa.Column("updated_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gateway_responses")),
    )
    with op.batch_alter_table("gateway_responses") as batch:
        batch.create_index("ix_gateway_responses_owner", ["owner_id"], unique=False)


def downgrade() -> None:
    op.drop_table("gateway_responses")
