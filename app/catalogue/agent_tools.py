"""Which entries an agent's ``tools`` may hold: the one check, for the API and the models file alike.

An entry is a tool name (``current_time``; an MCP server's tool as ``{server}__{tool}``) or a whole MCP
server (``mcp:{server}/*``). :func:`check_agent_tools` checks the syntax of each, then asks a
:class:`ToolDirectory` whether it exists: a plugin tool (``iris.tools``, the built-ins among them) by
its name; an MCP tool by its server's tool list where this process has one, else when its server is
in the catalogue (which tools a server has is learnt when it connects; a name it does not list is
simply not offered to the model). The app builds the
plugin part once (``iris.app.asgi.build_tool_directory``); the servers are added where the catalogue is
read (the agents API per request, the models file when it is applied, after its ``[[mcpServers]]``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from iris.app.errors import Unprocessable

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
    """A directory of tool names and MCP server names. ``servers=None``: the servers are not known here
    (the models file before the database is read), so any passes and is checked later. ``listed``: the
    servers whose tools are known (their ``{server}__{tool}`` names are in ``tools``; ``None``: every
    server's); a tool of a server not listed yet passes, since its tools are learnt when it connects."""

    tools: frozenset[str]
    servers: frozenset[str] | None = frozenset()
    listed: frozenset[str] | None = None

    @classmethod
    def of(cls, tools: Collection[str], servers: Collection[str] | None = ()) -> KnownTools:
        return cls(tools=frozenset(tools), servers=None if servers is None else frozenset(servers))

    def with_servers(
        self, servers: Collection[str], tools_of: Mapping[str, Collection[str]] | None = None
    ) -> KnownTools:
        """The same tools, exactly these MCP servers, and the tools of those whose list is known."""
        listed = dict(tools_of or {})
        names = self.tools.union(*(set(tools) for tools in listed.values()))
        return replace(self, tools=names, servers=frozenset(servers), listed=frozenset(listed))

    def has_tool(self, name: str) -> bool:
        if name in self.tools:
            return True
        server, separator, _ = name.partition(SERVER_SEPARATOR)
        if not separator or not self.has_server(server):
            return False
        if self.servers is None:
            return True
        return server not in (self.servers if self.listed is None else self.listed)

    def has_server(self, name: str) -> bool:
        return self.servers is None or name in self.servers


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
