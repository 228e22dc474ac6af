"""Tools and MCP servers as the admin API shows them (``GET /api/tools``, ``/api/mcp-servers``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import msgspec

from iris.app.mcp.config import MissingVariable, ServerConfig
from iris.app.persistence.models import McpServer
from iris.app.runs.intake.toolbox import RunTool, Toolbox, mcp_run_tool
from iris.app.schemas.mcp import (
    IconOut,
    McpHealth,
    McpServerOut,
    OAuthSettings,
    ToolFailureOut,
    ToolList,
    ToolOut,
)


def tool_out(tool: RunTool) -> ToolOut:
    hints = {k: v for k, v in msgspec.structs.asdict(tool.hints).items() if v is not None}
    return ToolOut(
        name=tool.name,
        source=tool.source,
        description=tool.description,
        parameters=tool.parameters,
        approval=tool.approval,
        needs_approval=tool.needs_approval,
        timeout_seconds=tool.timeout_seconds,
        available=tool.unavailable is None,
        unavailable_reason=tool.unavailable,
        hints=hints or None,
        title=tool.title,
        icons=[msgspec.convert(icon, IconOut) for icon in tool.icons] or None,
    )


def server_out(row: McpServer, toolbox: Toolbox) -> McpServerOut:
    """A server with this process's view of it; nothing is connected to build it."""
    connection = toolbox.pool.known(row.name)
    if not row.enabled:
        health = McpHealth(state="disabled", tools=0)
    elif connection is None or connection.config.version != ServerConfig.from_row(row).version:
        health = _not_connected(row, toolbox)
    else:
        health = msgspec.convert(connection.health(), McpHealth)
    listed = connection.cached_tools() if connection is not None and row.enabled else []
    http = row.transport == "http"
    return McpServerOut(
        id=str(row.id),
        name=row.name,
        transport="http" if http else "stdio",
        approval=ServerConfig.from_row(row).approval,
        tool_approval=dict(ServerConfig.from_row(row).tool_approval),
        connect_timeout_seconds=row.connect_timeout_seconds,
        call_timeout_seconds=row.call_timeout_seconds,
        enabled=row.enabled,
        from_file=row.from_file,
        health=health,
        tools=[tool_out(mcp_run_tool(connection, t)) for t in listed] if connection is not None else [],
        created_at=row.created_at,
        updated_at=row.updated_at,
        url=row.url if http else None,
        headers=dict(row.headers) if http else None,
        command=None if http else row.command,
        args=None if http else list(row.args),
        env=None if http else dict(row.env),
        oauth=msgspec.convert(row.oauth, OAuthSettings) if http and row.oauth is not None else None,
    )


def _not_connected(row: McpServer, toolbox: Toolbox) -> McpHealth:
    """``idle``, or ``down`` naming the ``${VAR}`` it needs and this process's environment lacks (a server
    from the models file: the API refuses to save one), so the reason shows before anything connects."""
    try:
        ServerConfig.from_row(row).check_variables(toolbox.pool.environ)
    except MissingVariable as exc:
        return McpHealth(state="down", tools=0, error=str(exc))
    return McpHealth(state="idle", tools=0)


async def every_tool(toolbox: Toolbox, servers: Sequence[McpServer]) -> ToolList:
    """Plugin tools, then each enabled server's (connected now, within its connect timeout)."""
    plugins, failures = toolbox.registry.load_all()
    found = [tool for name in plugins if (tool := toolbox.plugin_tool(name)) is not None]
    listed = await asyncio.gather(
        *(toolbox.server_tools(ServerConfig.from_row(row)) for row in servers if row.enabled)
    )
    return ToolList(
        tools=[tool_out(tool) for tool in [*found, *(t for tools in listed for t in tools)]],
        failed=[ToolFailureOut(name=f.name, source=f.source, error=f.error) for f in failures],
    )
