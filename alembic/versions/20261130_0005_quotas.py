"""Quotas: per-subject usage counters in fixed windows, and runs counted by owner.

Revision ID: 0005_faults_quotas
Revises: 0004_contract
Create Date: 2026-11-30 11:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_faults_quotas"
down_revision: str | None = "0004_contract"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "quota_usage",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("quota", sa.String(length=32), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("window_end", sa.BigInteger(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quota_usage")),
        sa.UniqueConstraint("subject", "quota", "window_start", name="uq_quota_usage_subject_quota_window"),
    )
    with op.batch_alter_table("quota_usage") as batch:
        batch.create_index("ix_quota_usage_window_end", ["window_end"], unique=False)
    with op.batch_alter_table("runs") as batch:
        batch.create_index("ix_runs_owner_status", ["owner_id", "status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_owner_status")
    op.drop_table("quota_usage")
