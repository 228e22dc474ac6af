"""ORM table of the sign-ins users made to OAuth-protected MCP servers (ADR 0086).

Kept apart from :mod:`iris.app.persistence.models` (which imports this module, so the table is on the one
shared metadata) because it belongs to the MCP client's authorization, not to chats and runs.
"""

from __future__ import annotations

import datetime as dt

from advanced_alchemy.base import UUIDv7AuditBase
from advanced_alchemy.types import DateTimeUTC
from sqlalchemy import String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column


class McpGrant(UUIDv7AuditBase):
    """One user's authorization at one MCP server (``owner_id`` ``""``: the server's own row, which holds
    the client registration every user shares, or the client-credentials grant).

    ``sealed_tokens`` and ``sealed_client`` are encrypted (Fernet, key from ``IRIS_MCP_TOKEN_KEY``):
    the tokens and the registered client never appear in the clear in the database. ``scope`` and
    ``expires_at`` are kept beside them in the clear, for the connections list."""

    __tablename__ = "mcp_grants"
    __table_args__ = (UniqueConstraint("owner_id", "server", name="uq_mcp_grants_owner_id_server"),)

    owner_id: Mapped[str] = mapped_column(String(200))
    server: Mapped[str] = mapped_column(String(32))
    sealed_tokens: Mapped[str | None] = mapped_column(Text, nullable=True)
    sealed_client: Mapped[str | None] = mapped_column(Text, nullable=True)
    issuer: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    revocation_endpoint: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    scope: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    expires_at: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)
