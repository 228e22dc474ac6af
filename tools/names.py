"""How agents name tools: a plugin tool by its name, one MCP tool as ``{server}__{tool}``, and every
tool of an MCP server as ``mcp:{server}/*``. One parser, so agent validation and run resolution agree."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

MCP_SEPARATOR = "__"
SERVER_NAME_PATTERN = re.compile(r"^[a-z0-9_-]{1,32}$")
_WHOLE_SERVER = re.compile(r"^mcp:(?P<server>[a-z0-9_-]{1,32})/\*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 64


@dataclass(frozen=True, slots=True)
class ToolRef:
    """One entry of an agent's ``tools``: ``kind`` says which of the three forms it is."""

    kind: Literal["tool", "mcp_tool", "mcp_server"]
    name: str
    server: str | None = None
    tool: str | None = None


def parse_tool_ref(ref: str) -> ToolRef:
    """``current_time`` → a tool; ``charts__draw`` → tool ``draw`` of server ``charts``;
    ``mcp:charts/*`` → every tool of ``charts``."""
    whole = _WHOLE_SERVER.match(ref)
    if whole is not None:
        return ToolRef(kind="mcp_server", name=ref, server=whole["server"])
    server, separator, tool = ref.partition(MCP_SEPARATOR)
    if separator and tool and SERVER_NAME_PATTERN.match(server):
        return ToolRef(kind="mcp_tool", name=ref, server=server, tool=tool)
    return ToolRef(kind="tool", name=ref)


def mcp_tool_name(server: str, tool: str) -> str:
    """The name the model knows an MCP tool by: ``{server}__{tool}``, with characters vendors refuse in
    function names made ``_`` and cut to 64."""
    return f"{server}{MCP_SEPARATOR}{_UNSAFE.sub('_', tool)}"[:MAX_NAME]
