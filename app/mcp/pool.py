"""The MCP connections one process keeps: one per server, made on first use, replaced when the
server's configuration changes (every process reads it from the database, so an edit made through
another process is picked up by the next run that names the server).

The MCP SDK (with its generated protocol types) is about 47 MiB resident and a third of a second of
imports, so :mod:`app.mcp.connection` is imported only when a first connection is made, on a thread
with the collector paused (as providers are, :mod:`providers.registry`): a process without MCP servers
never holds it, and one that starts using them keeps its loop going meanwhile.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from app.mcp.config import ServerConfig
from providers.registry import collection_paused

if TYPE_CHECKING:
    from app.mcp.connection import ServerConnection

CONNECTION_MODULE = "app.mcp.connection"


async def connection_module() -> ModuleType:
    """:mod:`app.mcp.connection`, imported on a thread the first time (see the module docstring)."""
    loaded = sys.modules.get(CONNECTION_MODULE)
    return loaded if loaded is not None else await asyncio.to_thread(_import_connection)


def _import_connection() -> ModuleType:
    with collection_paused():
        return importlib.import_module(CONNECTION_MODULE)


class McpPool:
    """Connections by server name. ``environ`` is where ``${VAR}`` in headers and env are read."""

    def __init__(
        self, environ: Mapping[str, str], *, tools_ttl_seconds: float, log_dir: Path | None = None
    ) -> None:
        self._environ = environ
        self._ttl = tools_ttl_seconds
        self._log_dir = log_dir
        self._connections: dict[str, ServerConnection] = {}
        self._closing: set[asyncio.Task[None]] = set()

    async def connection(self, config: ServerConfig) -> ServerConnection:
        """The live connection for this configuration (a new one if it changed since)."""
        current = self._connections.get(config.name)
        if current is not None and current.config.version == config.version:
            return current
        module = await connection_module()
        current = self._connections.get(config.name)  # another task may have made it meanwhile
        if current is not None and current.config.version == config.version:
            return current
        if current is not None:
            self._retire(current)
        fresh: ServerConnection = module.ServerConnection(
            config, self._environ, tools_ttl_seconds=self._ttl, log_dir=self._log_dir
        )
        self._connections[config.name] = fresh
        return fresh

    def known(self, name: str) -> ServerConnection | None:
        """The connection made for this server, if any (health for the admin API)."""
        return self._connections.get(name)

    def retire(self, name: str) -> None:
        """Leave a server that was disabled, deleted or renamed."""
        current = self._connections.pop(name, None)
        if current is not None:
            self._retire(current)

    def keep_only(self, names: Iterable[str]) -> None:
        """Leave every server not among ``names`` (the enabled ones)."""
        for name in set(self._connections) - set(names):
            self.retire(name)

    async def close(self) -> None:
        """Leave every server (shutdown)."""
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

    def _retire(self, connection: ServerConnection) -> None:
        task = asyncio.get_running_loop().create_task(connection.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
