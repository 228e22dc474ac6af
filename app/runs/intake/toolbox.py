"""The tools a run may call: plugin tools (``iris.tools``, the built-ins among them) and the tools of
MCP servers, resolved from an agent's tool names into one shape, :class:`RunTool`.

An agent names a plugin tool (``current_time``), one MCP tool (``charts__chart``) or every tool of an
MCP server (``mcp:charts/*``). MCP servers are read from the database at each run (so every process
sees an admin's change) and their tools from the process's live connection (:mod:`iris.app.mcp`); a server
that is down offers the tools it listed last, or none — a run never waits on it past its connect
timeout, and never fails because of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from iris.app.mcp.config import ServerConfig
from iris.app.mcp.pool import McpPool
from iris.app.persistence.repositories import McpServerRepository
from iris.providers import ToolSpec
from iris.tools import Approval, ToolContext, ToolHints, ToolResult, needs_approval
from iris.tools.names import mcp_tool_name, parse_tool_ref
from iris.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from iris.app.mcp.connection import ServerConnection
    from iris.app.mcp.listing import McpPrompt, McpTool

Invoke = Callable[[Mapping[str, Any], ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class RunTool:
    """A tool as a run offers and calls it. ``source``: ``builtin``, ``plugin:{module}`` or
    ``mcp:{server}``; ``approval`` is the rule that applies (the admin's for MCP tools)."""

    name: str
    description: str
    parameters: dict[str, Any]
    source: str
    approval: Approval
    hints: ToolHints
    timeout_seconds: float
    invoke: Invoke
    unavailable: str | None = None
    """Why it cannot be called (shown by ``GET /api/tools``; never offered to a model)."""
    title: str | None = None
    icons: tuple[dict[str, Any], ...] = ()
    """Its display name and icons (an MCP tool's, for people: ``GET /api/tools``, the page)."""

    @property
    def needs_approval(self) -> bool:
        return needs_approval(self.approval, self.hints)

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)


class Toolbox:
    """Plugin tools and MCP connections, shared by every run of the process."""

    def __init__(self, registry: ToolRegistry, pool: McpPool) -> None:
        self.registry = registry
        self.pool = pool

    def plugin_tool(self, name: str) -> RunTool | None:
        tool = self.registry.get(name)
        if tool is None:
            return None
        d = tool.definition
        return RunTool(
            name=d.name,
            description=d.description,
            parameters=d.parameters,
            source=self.registry.source(name),
            approval=d.approval,
            hints=d.hints,
            timeout_seconds=d.timeout_seconds,
            invoke=tool.call,
        )

    async def for_agent(
        self, names: Sequence[str], servers: McpServerRepository, owner: str | None = None
    ) -> tuple[RunTool, ...]:
        """The agent's tools in the order it names them, each once; names that resolve to nothing
        (an uninstalled plugin, a disabled server, a tool a server no longer lists) are left out.
        ``owner``: the user whose connections a server each user signs in to is reached through."""
        refs = [parse_tool_ref(name) for name in names]
        wanted = {ref.server for ref in refs if ref.server is not None}
        rows = await servers.enabled_named(wanted) if wanted else []
        connections = [await self.pool.connection(ServerConfig.from_row(row), owner) for row in rows]
        listed = await asyncio.gather(*(c.tools() for c in connections))
        by_server = {c.config.name: (c, found) for c, found in zip(connections, listed, strict=True)}
        out: dict[str, RunTool] = {}
        for ref in refs:
            if ref.server is None:
                tool = self.plugin_tool(ref.name)
                if tool is not None:
                    out.setdefault(tool.name, tool)
                continue
            if ref.server not in by_server:
                continue
            connection, found = by_server[ref.server]
            for mcp_tool in found:
                if mcp_tool.unavailable is not None:
                    continue  # never offered: every call of it would fail
                if ref.kind == "mcp_server" or mcp_tool_name(ref.server, mcp_tool.name) == ref.name:
                    run_tool = mcp_run_tool(connection, mcp_tool)
                    out.setdefault(run_tool.name, run_tool)
        return tuple(out.values())

    async def agent_servers(
        self, names: Sequence[str], servers: McpServerRepository, owner: str | None = None
    ) -> list[ServerConnection]:
        """The connections of the enabled MCP servers an agent's tool names name (not connected yet);
        ``owner``'s own for a server each user signs in to."""
        wanted = {ref.server for ref in map(parse_tool_ref, names) if ref.server is not None}
        rows = await servers.enabled_named(wanted) if wanted else []
        return [await self.pool.connection(ServerConfig.from_row(row), owner) for row in rows]

    async def agent_prompts(
        self, names: Sequence[str], servers: McpServerRepository, owner: str | None = None
    ) -> tuple[list[McpPrompt], dict[str, str]]:
        """The prompts of an agent's MCP servers (``owner``'s connections to those each user signs in
        to), and why a server's could not be listed (by name)."""
        connections = await self.agent_servers(names, servers, owner)
        listed = await asyncio.gather(*(c.prompts() for c in connections), return_exceptions=True)
        prompts: list[McpPrompt] = []
        failed: dict[str, str] = {}
        for connection, found in zip(connections, listed, strict=True):
            if isinstance(found, BaseException):
                failed[connection.config.name] = str(found) or type(found).__name__
            else:
                prompts += found
        return prompts, failed

    def listed_tools(self, server: str) -> list[str]:
        """The ``{server}__{tool}`` names a server listed last in this process (none: not listed yet)."""
        connection = self.pool.known(server)
        return [t.qualified_name for t in connection.cached_tools()] if connection is not None else []

    async def server_tools(self, row_config: ServerConfig) -> list[RunTool]:
        """Every tool one server offers now (``GET /api/tools``, ``GET /api/mcp-servers``)."""
        connection = await self.pool.connection(row_config)
        return [mcp_run_tool(connection, tool) for tool in await connection.tools()]


def mcp_run_tool(connection: ServerConnection, tool: McpTool) -> RunTool:
    """One MCP tool as a run tool: called through the server's connection with its call timeout."""
    config = connection.config
    timeout = config.call_timeout_seconds

    async def invoke(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return await connection.call(tool.name, arguments, progress=context.progress, log=context.log)

    return RunTool(
        name=mcp_tool_name(config.name, tool.name),
        description=tool.description,
        parameters=tool.parameters,
        source=f"mcp:{config.name}",
        approval=config.approval_for(tool.name),
        hints=tool.hints,
        timeout_seconds=timeout + 10,  # the connection bounds the call itself, and cancels it remotely
        invoke=invoke,
        unavailable=tool.unavailable,
        title=tool.title,
        icons=tool.icons,
    )
