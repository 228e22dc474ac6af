"""Reading one resource a tool linked to (``resources/read``), on request: from the server's live
connection, the one its tool calls use, within the server's call timeout.

The MCP SDK is imported in the function, never at the top: this module is imported with the run
engine, and the SDK only with a first connection (:mod:`iris.app.mcp.pool`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import TYPE_CHECKING

from iris.tools import ResourceContent, ToolFailed

if TYPE_CHECKING:
    from iris.app.mcp.connection import ServerConnection

WEB_SCHEMES = ("http", "https")
"""Links to the web: the spec leaves them to the client to open itself, never to ``resources/read``."""


def read_refusal(uri: str) -> str | None:
    """Why a link's ``uri`` is not read through its server (it points to the web); ``None`` if it is."""
    scheme = uri.partition(":")[0].lower()
    if scheme in WEB_SCHEMES:
        return f"{uri} is a web address: open it yourself; Iris reads only a server's own resources"
    return None


class SignInRequired(ToolFailed):
    """The link's server wants the reader's own sign-in, which only a call can ask for."""


async def read_resource(connection: ServerConnection, uri: str) -> ResourceContent:
    """The resource ``uri`` as the server gives it (its entry for ``uri``, else its first), text or
    bytes; a :class:`ToolFailed` saying why when the server is down, refuses, answers nothing usable or
    takes longer than its call timeout."""
    import mcp_types as mt
    from mcp.shared.exceptions import MCPError

    from iris.app.mcp.oauth.connection import AuthorizedConnection

    name = connection.config.name
    if isinstance(connection, AuthorizedConnection) and not await connection.signed_in():
        raise SignInRequired(
            f"sign in to the MCP server {name} first: call one of its tools and sign in when asked"
        )
    client = await connection._ensure()  # the live client its calls use (connection.py is at its size limit)
    try:
        async with asyncio.timeout(connection.config.call_timeout_seconds):
            result = await client.read_resource(uri)
    except TimeoutError:
        raise ToolFailed(f"the MCP server {name} did not read {uri} in time") from None
    except MCPError as exc:
        raise ToolFailed(f"the MCP server {name} refused to read {uri}: {exc}") from None
    except Exception as exc:  # a transport failure: the connection notices and reconnects
        raise ToolFailed(f"the MCP server {name} failed to read {uri}: {type(exc).__name__}") from None
    contents = [c for c in result.contents if str(c.uri) == uri] or list(result.contents)
    if not contents:
        raise ToolFailed(f"the MCP server {name} returned nothing for {uri}")
    found = contents[0]
    if isinstance(found, mt.TextResourceContents):
        return ResourceContent(uri=uri, mime_type=found.mime_type, text=found.text)
    try:
        data = base64.b64decode(found.blob, validate=True)
    except (binascii.Error, ValueError):
        raise ToolFailed(f"the MCP server {name} returned {uri} as invalid base64") from None
    return ResourceContent(uri=uri, mime_type=found.mime_type, data=data)
