"""A server's prompts: listed for ``GET /api/agents/{slug}/prompts`` and fetched when a run starts from
one (``prompts/list``, ``prompts/get``), on the connection's client (:mod:`iris.app.mcp.connection`)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from mcp import Client
from mcp.shared.exceptions import MCPError

from iris.app.mcp.listing import McpPrompt, listed_prompt, prompt_text
from iris.tools import ToolFailed

LIST_PAGES = 20
"""At most this many pages of a list are read."""


async def list_prompts(client: Client, server: str, seconds: float) -> list[McpPrompt]:
    """The prompts the server lists now (none when it has no prompts capability)."""
    if client.server_capabilities.prompts is None:
        return []
    found: list[McpPrompt] = []
    cursor: str | None = None
    async with asyncio.timeout(seconds):
        for _ in range(LIST_PAGES):
            page = await client.list_prompts(cursor=cursor)
            found += [listed_prompt(server, prompt) for prompt in page.prompts]
            if (cursor := page.next_cursor) is None:
                break
    return found


async def get_prompt(
    client: Client, server: str, name: str, arguments: Mapping[str, str], seconds: float
) -> str:
    """One prompt's messages as text, within ``seconds``; a :class:`ToolFailed` when the server
    refuses it or takes too long."""
    try:
        async with asyncio.timeout(seconds):
            return prompt_text(await client.get_prompt(name, dict(arguments)))
    except MCPError as exc:
        raise ToolFailed(f"the MCP server {server} refused the prompt {name!r}: {exc}") from None
    except TimeoutError:
        raise ToolFailed(f"the MCP server {server} did not give the prompt {name!r} in time") from None
