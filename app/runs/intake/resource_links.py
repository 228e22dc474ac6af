"""A resource link a tool returned, read on request (``POST …/resource-links/{index}/read``).

The link is found in the stored output of a tool message of the caller's thread; it is read only from
the MCP server that returned it (recorded on the link when the result was stored), through the
connection its tool calls use, and kept like a tool's media: bytes as an upload of the thread (history
signs them afresh), text in the part, both over the same limits as a tool result. The link part then
carries what was read (``readAt``; ``text``, or ``path``/``uploadId``/``size``), so a second read
answers from what is stored. No transaction is open while the server is asked. See ADR 0084.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from iris.app.errors import Conflict, NotFound, Unprocessable, UpstreamFailed
from iris.app.mcp.config import ServerConfig
from iris.app.mcp.resources import SignInRequired, read_refusal, read_resource
from iris.app.media.tool_media import MediaStore, ResultTooLarge, canonical_parts, check_limits
from iris.app.persistence.db import session_scope
from iris.app.persistence.repositories import (
    AgentRepository,
    McpServerRepository,
    MessageRepository,
    SessionRepository,
    UploadRepository,
)
from iris.app.runs.intake.toolbox import Toolbox
from iris.app.security.access import owned_agent_session
from iris.app.security.auth import Principal
from iris.app.storage.signing import sign_image_parts, with_urls
from iris.tools import ToolFailed

NOT_FOUND = "No resource link at this index of this message."


@dataclass(frozen=True, slots=True)
class _Found:
    """A link to read: where it is stored, and the server to read it from."""

    message_pk: UUID
    index: int
    link: dict[str, Any]
    config: ServerConfig | None


async def read_link(
    *,
    principal: Principal,
    slug: str,
    thread_id: str,
    message_id: str,
    index: int,
    toolbox: Toolbox,
    media: MediaStore,
    ttl_seconds: int,
) -> dict[str, Any]:
    """The link part once read (its stored bytes with a fresh ``url`` and ``expiresAt``, or its
    ``text``); an :class:`IrisError` with a stable code when it cannot be (see the module docstring)."""
    found = await _find(media, principal, slug, thread_id, message_id, index)
    owner_id = principal.user_id
    if found.config is None:  # read before: what is stored
        return await _signed(found.link, media, ttl_seconds)
    connection = await toolbox.pool.connection(found.config, owner_id)  # the reader's own sign-in
    try:
        content = await read_resource(connection, str(found.link["uri"]))
        check_limits([content], media.limits)
    except SignInRequired as exc:
        raise Conflict(f"Not read: {exc}.", code="mcp_sign_in_required") from None
    except ToolFailed as exc:
        raise UpstreamFailed(str(exc), code="mcp_read_failed") from None
    except ResultTooLarge as exc:
        raise Unprocessable(f"The resource is too large: {exc}.", code="resource_too_large") from None
    (stored,) = await canonical_parts([content], media, owner_id=owner_id, thread_id=thread_id)
    read = {k: v for k, v in stored.items() if k not in ("type", "uri", "name")}  # the link keeps its name
    read["readAt"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return await _signed(await _keep(found, read, media, owner_id, thread_id), media, ttl_seconds)


async def _find(
    media: MediaStore, principal: Principal, slug: str, thread_id: str, message_id: str, index: int
) -> _Found:
    """The link, checked before anything is read: the thread is the caller's with this agent, the
    message a tool's with a resource link at ``index``, returned by an MCP server that is still
    enabled, and neither too large by its own account nor a web address."""
    async with session_scope(media.alchemy) as db:
        sessions = SessionRepository(session=db)
        session = await owned_agent_session(AgentRepository(session=db), sessions, principal, slug, thread_id)
        row = await MessageRepository(session=db).get_in_session(session.id, message_id)
        if row is None or row.role != "tool":
            raise NotFound(NOT_FOUND, code="resource_link_not_found")
        link = _link_at(row.meta, index)
        if link.get("readAt"):
            return _Found(row.id, index, link, None)
        server = link.get("server")
        if not isinstance(server, str):
            raise Unprocessable(
                "This link was not returned by an MCP server: there is no server to read it from.",
                code="resource_link_unreadable",
            )
        refusal = read_refusal(str(link.get("uri", "")))
        if refusal is not None:
            raise Unprocessable(f"Not read: {refusal}.", code="resource_link_external")
        rows = await McpServerRepository(session=db).enabled_named({server})
        if not rows:
            raise Conflict(
                f"The MCP server {server!r} that returned this link is gone (removed or disabled).",
                code="mcp_server_gone",
            )
        declared, limit = link.get("size"), media.limits.max_media_bytes
        if isinstance(declared, int) and declared > limit:
            raise Unprocessable(
                f"The resource has {declared} bytes; at most {limit} are read.", code="resource_too_large"
            )
        return _Found(row.id, index, link, ServerConfig.from_row(rows[0]))


def _link_at(meta: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The resource link part at ``index`` of a tool message's stored output (404 otherwise)."""
    content = (meta.get("tool_agent_output") or {}).get("content") or []
    if not 0 <= index < len(content) or content[index].get("type") != "resource_link":
        raise NotFound(NOT_FOUND, code="resource_link_not_found")
    return dict(content[index])


async def _keep(
    found: _Found, read: dict[str, Any], media: MediaStore, owner_id: str, thread_id: str
) -> dict[str, Any]:
    """Store what was read on the link part; when another request read it meanwhile, its copy is kept
    and this one's upload removed (one copy per link)."""
    async with session_scope(media.alchemy) as db:
        row = await MessageRepository(session=db).locked(found.message_pk)
        if row is None:  # the thread was deleted meanwhile
            raise NotFound(NOT_FOUND, code="resource_link_not_found")
        current = _link_at(row.meta, found.index)
        if not current.get("readAt") and current.get("uri") == found.link.get("uri"):
            output = dict(row.meta["tool_agent_output"])
            content = list(output["content"])
            content[found.index] = current = {**current, **read}
            row.meta = {**row.meta, "tool_agent_output": {**output, "content": content}}
            return current
    if read.get("uploadId"):  # a concurrent read won: this copy is not kept
        async with session_scope(media.alchemy) as db:
            await UploadRepository(session=db).delete_owned(UUID(read["uploadId"]), owner_id, thread_id)
        await media.storage.delete(str(read["path"]))
    return current


async def _signed(link: Mapping[str, Any], media: MediaStore, ttl_seconds: int) -> dict[str, Any]:
    """The link as a reader gets it: stored bytes with a fresh URL."""
    signed = await sign_image_parts(media.storage, [link], ttl_seconds=ttl_seconds)
    (out,) = with_urls([link], signed)
    return out
