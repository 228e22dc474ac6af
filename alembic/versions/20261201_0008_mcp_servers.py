"""MCP servers as tool sources: ``mcp_servers`` (stdio command or Streamable HTTP URL, headers and env
as written — ``${VAR}`` is expanded at connect time, never stored expanded — approval rules and
timeouts; ``from_file`` for the models file's ``[[mcpServers]]``).

Revision ID: 0008_mcp_servers
Revises: 0007_agents
Create Date: 2026-12-01 23:50:00
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0008_mcp_servers"
down_revision: str | None = "0007_agents"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mcp_servers",
        sa.Column("id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("transport", sa.String(length=8), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=True),
        sa.Column("headers", advanced_alchemy.types.JsonB, nullable=False),
        sa.Column("command", sa.String(length=1000), nullable=True),
        sa.Column("args", advanced_alchemy.types.JsonB, nullable=False),
        sa.Column("env", advanced_alchemy.types.JsonB, nullable=False),
        sa.Column("approval", sa.String(length=16), nullable=False),
        sa.Column("tool_approval", advanced_alchemy.types.JsonB, nullable=False),
        sa.Column("connect_timeout_seconds", sa.Float(), nullable=False),
        sa.Column("call_timeout_seconds", sa.Float(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("from_file", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column("created_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False),
        sa.Column("updated_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mcp_servers")),
        sa.UniqueConstraint("name", name=op.f("uq_mcp_servers_name")),
    )


def downgrade() -> None:
    op.drop_table("mcp_servers")
