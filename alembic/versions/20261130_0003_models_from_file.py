"""Models: which rows the models file (``IRIS_MODELS_FILE``) manages (``from_file``).

Revision ID: 0003_operator
Revises: 0002
Create Date: 2026-11-30 11:35:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_operator"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.add_column(sa.Column("from_file", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.drop_column("from_file")
