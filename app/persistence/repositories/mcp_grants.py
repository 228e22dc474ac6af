"""Users' sign-ins at OAuth-protected MCP servers (``mcp_grants``), by owner and server."""

from __future__ import annotations

from collections.abc import Sequence

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import delete, select

from iris.app.persistence.mcp_grant_models import McpGrant


class McpGrantRepository(SQLAlchemyAsyncRepository[McpGrant]):
    """The ``mcp_grants`` table; ``owner_id`` ``""`` is a server's own row (its client registration)."""

    model_type = McpGrant

    async def find(self, owner_id: str, server: str) -> McpGrant | None:
        """The row of this owner at this server, if any."""
        stmt = select(McpGrant).where(McpGrant.owner_id == owner_id, McpGrant.server == server)
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def owned(self, owner_id: str) -> Sequence[McpGrant]:
        """One user's signed-in servers (rows holding tokens), by server name."""
        stmt = (
            select(McpGrant)
            .where(McpGrant.owner_id == owner_id, McpGrant.sealed_tokens.is_not(None))
            .order_by(McpGrant.server)
        )
        return (await self.session.execute(stmt)).scalars().all()

    async def remove(self, owner_id: str, server: str) -> int:
        """Delete the owner's row at the server; how many rows went (0 or 1)."""
        stmt = delete(McpGrant).where(McpGrant.owner_id == owner_id, McpGrant.server == server)
        result = await self.session.execute(stmt)
        return int(getattr(result, "rowcount", 0) or 0)
