"""The audit log's ``detail``: what a run's row adds (tool, server, outcome, duration, arguments when kept).

Revision ID: 0020_audit_detail
Revises: 0019_audit_log
Create Date: 2026-12-06 13:50:00
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0020_audit_detail"
down_revision: str | None = "0019_audit_log"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("audit_log") as batch:
        batch.add_column(sa.Column("detail", advanced_alchemy.types.JsonB, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audit_log") as batch:
        batch.drop_column("detail")
