"""Per-user authorization at OAuth-protected MCP servers: ``mcp_grants`` (each user's sealed tokens, and
each server's shared client registration) and ``mcp_servers.oauth`` (how a server is authorized).

Revision ID: 0023_mcp_grants
Revises: 0022_spend_ledger
Create Date: 2026-12-06 16:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0023_mcp_grants"
down_revision: str | None = "0022_spend_ledger"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WHEN = advanced_alchemy.types.datetime.DateTimeUTC(timezone=True)


def upgrade() -> None:
    op.create_table(
        "mcp_grants",
        sa.Column("id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("owner_id", sa.String(length=200), nullable=False),
        sa.Column("server", sa.String(length=32), nullable=False),
        sa.Column("sealed_tokens", sa.Text(), nullable=True),
        sa.Column("sealed_client", sa.Text(), nullable=True),
        sa.Column("issuer", sa.String(length=2000), nullable=True),
        sa.Column("revocation_endpoint", sa.String(length=2000), nullable=True),
        sa.Column("scope", sa.String(length=2000), nullable=True),
        sa.Column("expires_at", _WHEN, nullable=True),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.Column("updated_at", _WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mcp_grants")),
        sa.UniqueConstraint("owner_id", "server", name="uq_mcp_grants_owner_id_server"),
    )
    with op.batch_alter_table("mcp_servers") as batch:
        batch.add_column(sa.Column("oauth", advanced_alchemy.types.JsonB, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mcp_servers") as batch:
        batch.drop_column("oauth")
    op.drop_table("mcp_grants")
