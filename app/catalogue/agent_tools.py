"""Which entries an agent's ``tools`` may hold: the one check, for the API and the models file alike.

An entry is a tool name (``current_time``; an MCP server's tool as ``{server}__{tool}``) or a whole MCP
server (``mcp:{server}/*``). :func:`check_agent_tools` checks the syntax of each, then asks a
:class:`ToolDirectory` whether it exists. The directory is built once per app (``app.asgi``); today it
knows Iris's built-in server tools (``app.runs.tools.SERVER_TOOLS``) and no MCP server, so
``{server}__{tool}`` and ``mcp:{server}/*`` entries are well-formed but unknown until a tool source
provides them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from app.errors import Unprocessable

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""The function-name alphabet and length every vendor accepts."""
SERVER_NAME = re.compile(r"[a-z0-9_-]{1,32}")
"""An MCP server's name."""
WHOLE_SERVER = re.compile(r"mcp:(?P<server>[^/]*)/\*")
SERVER_SEPARATOR = "__"
"""Between an MCP server's name and its tool's: ``{server}__{tool}``."""


@runtime_checkable  # Litestar checks a dependency's value against its declared type
class ToolDirectory(Protocol):
    """What tools exist for an agent to list."""

    def has_tool(self, name: str) -> bool:
        """Whether a tool of this name exists (built-in, plugin, or an MCP server's ``{server}__{tool}``)."""
        ...

    def has_server(self, name: str) -> bool:
        """Whether an MCP server of this name is configured."""
        ...


@dataclass(frozen=True, slots=True)
class KnownTools:
    """A directory of fixed names."""

    tools: frozenset[str]
    servers: frozenset[str] = frozenset()

    @classmethod
    def of(cls, tools: Collection[str], servers: Collection[str] = ()) -> KnownTools:
        return cls(tools=frozenset(tools), servers=frozenset(servers))

    def has_tool(self, name: str) -> bool:
        return name in self.tools

    def has_server(self, name: str) -> bool:
        return name in self.servers


def check_agent_tools(entries: Sequence[str], directory: ToolDirectory, *, field: str = "tools") -> list[str]:
    """The entries, each well-formed (422 ``invalid_tool_name``), existing (422 ``unknown_tool``) and
    listed once; ``field`` names the list in errors (``tools[2]``)."""
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"{field}[{index}]"
        if entry in seen:
            raise Unprocessable(f"{entry!r} is listed twice.", code="invalid_tool_name", field=where)
        seen.add(entry)
        _check_entry(entry, directory, where)
    return list(entries)


def _check_entry(entry: str, directory: ToolDirectory, where: str) -> None:
    whole = WHOLE_SERVER.fullmatch(entry)
    if whole is not None:
        server = whole["server"]
        _check_server_name(server, entry, where)
        if not directory.has_server(server):
            raise _unknown(f"There is no MCP server {server!r} (for {entry!r}).", where)
        return
    if entry.startswith("mcp:") or not TOOL_NAME.fullmatch(entry):
        raise Unprocessable(
            f"{entry!r} is not a tool entry: name a tool ({TOOL_NAME.pattern}, e.g. 'current_time'), an MCP "
            f"server's tool ('{{server}}{SERVER_SEPARATOR}{{tool}}') or a whole server ('mcp:{{server}}/*').",
            code="invalid_tool_name",
            field=where,
        )
    server, separator, _ = entry.partition(SERVER_SEPARATOR)
    if separator:
        _check_server_name(server, entry, where)
        if not directory.has_server(server):
            raise _unknown(f"There is no MCP server {server!r} (for {entry!r}).", where)
    if not directory.has_tool(entry):
        raise _unknown(f"There is no tool {entry!r}.", where)


def _check_server_name(server: str, entry: str, where: str) -> None:
    if not SERVER_NAME.fullmatch(server):
        raise Unprocessable(
            f"{entry!r}: an MCP server's name is {SERVER_NAME.pattern}.",
            code="invalid_tool_name",
            field=where,
        )


def _unknown(detail: str, where: str) -> Unprocessable:
    return Unprocessable(detail, code="unknown_tool", field=where)
