"""The audit log: append-only rows of admin changes and key use, with actor, time, request and trace id.

Revision ID: 0019_audit_log
Revises: 0018_api_keys
Create Date: 2026-12-06 13:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0019_audit_log"
down_revision: str | None = "0018_api_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("actor_key_id", sa.String(length=64), nullable=True),
        sa.Column("action", sa.String(length=120), nullable=False),
        sa.Column("target", sa.String(length=400), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=True),
        sa.Column("request_id", sa.String(length=128), nullable=True),
        sa.Column("trace_id", sa.String(length=32), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    with op.batch_alter_table("audit_log") as batch:
        batch.create_index("ix_audit_log_at", ["at"], unique=False)
        batch.create_index("ix_audit_log_actor", ["actor"], unique=False)


def downgrade() -> None:
    op.drop_table("audit_log")
