"""MCP servers, looked up by name."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import bindparam, select

from iris.app.persistence.models import McpServer
from iris.app.persistence.repositories._common import first_or_none

_BY_NAME = select(McpServer).where(McpServer.name == bindparam("name"))


class McpServerRepository(SQLAlchemyAsyncRepository[McpServer]):
    """The MCP servers agents may take tools from."""

    model_type = McpServer

    async def get_by_name(self, name: str) -> McpServer | None:
        """The server with this name, or ``None``."""
        return await first_or_none(self.session, _BY_NAME, {"name": name})

    async def list_all(self, *, include_disabled: bool = True) -> Sequence[McpServer]:
        """Servers by name; disabled ones only when asked."""
        stmt = select(McpServer).order_by(McpServer.name)
        if not include_disabled:
            stmt = stmt.where(McpServer.enabled.is_(True))
        return (await self.session.scalars(stmt)).all()

    async def enabled_named(self, names: Collection[str]) -> Sequence[McpServer]:
        """The enabled servers among ``names`` (a run's agent names them), by name."""
        if not names:
            return []
        stmt = (
            select(McpServer)
            .where(McpServer.enabled.is_(True), McpServer.name.in_(sorted(names)))
            .order_by(McpServer.name)
        )
        return (await self.session.scalars(stmt)).all()

    async def list_from_file(self) -> Sequence[McpServer]:
        """Servers the models file manages (enabled or not)."""
        return (await self.session.scalars(select(McpServer).where(McpServer.from_file.is_(True)))).all()
