"""MCP servers in the catalogue: a create body (the API's, or a models file entry) as a row, and the
models file's ``[[mcpServers]]`` applied like its ``[[models]]`` (idempotent, the file wins for the
servers it lists, one it drops is disabled)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from iris.app.persistence.models import McpServer
from iris.app.persistence.repositories import McpServerRepository
from iris.app.schemas.mcp import HttpServerCreate, McpServerCreate, check_secrets


def server_row(data: McpServerCreate) -> McpServer:
    """A new row from a create body (also the models file's ``[[mcpServers]]`` entries)."""
    http = isinstance(data, HttpServerCreate)
    headers = dict(data.headers) if isinstance(data, HttpServerCreate) else {}
    env = {} if isinstance(data, HttpServerCreate) else dict(data.env)
    check_secrets(headers, env)
    oauth = data.oauth if isinstance(data, HttpServerCreate) else None
    return McpServer(
        name=data.name,
        transport="http" if http else "stdio",
        url=data.url if isinstance(data, HttpServerCreate) else None,
        headers=headers,
        command=None if isinstance(data, HttpServerCreate) else data.command,
        args=[] if isinstance(data, HttpServerCreate) else list(data.args),
        env=env,
        approval=data.approval,
        tool_approval=dict(data.tool_approval),
        connect_timeout_seconds=data.connect_timeout_seconds,
        call_timeout_seconds=data.call_timeout_seconds,
        enabled=data.enabled,
        oauth=msgspec.to_builtins(oauth) if oauth is not None else None,
    )


_FIELDS = (
    "transport",
    "url",
    "headers",
    "command",
    "args",
    "env",
    "approval",
    "tool_approval",
    "connect_timeout_seconds",
    "call_timeout_seconds",
    "enabled",
    "oauth",
)


async def apply_servers(repo: McpServerRepository, entries: Sequence[McpServerCreate]) -> list[str]:
    """Bring the servers in line with the file's entries; one line per change made."""
    changes: list[str] = []
    listed = set()
    for entry in entries:
        wanted = server_row(entry)
        listed.add(wanted.name)
        row = await repo.get_by_name(wanted.name)
        if row is None:
            wanted.from_file = True
            await repo.add(wanted)
            changes.append(f"added MCP server {wanted.name}")
            continue
        differing = [name for name in _FIELDS if getattr(row, name) != getattr(wanted, name)]
        if differing or not row.from_file:
            for name in differing:
                setattr(row, name, getattr(wanted, name))
            row.from_file = True
            await repo.update(row)
            changes.append(
                f"updated MCP server {row.name}: {', '.join(differing) or 'now managed by the file'}"
            )
    for row in await repo.list_from_file():
        if row.name not in listed and row.enabled:
            row.enabled = False
            await repo.update(row)
            changes.append(f"disabled MCP server {row.name} (no longer in the file)")
    return changes
