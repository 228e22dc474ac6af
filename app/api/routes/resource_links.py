"""Reading a resource link a tool returned, on request (ADR 0084)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, post
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from iris.app.api.openapi import documented
from iris.app.runs import RunManager, read_link
from iris.app.schemas.mcp import ResourceLinkOut
from iris.app.security.auth import Principal
from iris.app.settings import Settings


class ResourceLinkController(Controller):
    """``/api/agents/{slug}/sessions/{sessionId}/messages/{messageId}/resource-links/{index}/read``."""

    path = "/api/agents/{slug:str}/sessions"
    tags = ["Sessions"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, Settings, RunManager]

    @post(
        "/{sessionId:str}/messages/{messageId:str}/resource-links/{index:int}/read",
        operation_id="ReadResourceLink",
        status_code=200,
        operation_class=documented(
            problems={
                404: ["agent_not_found", "thread_not_found", "resource_link_not_found", "route_not_found"],
                409: ["mcp_server_gone", "mcp_sign_in_required"],
                422: [
                    "invalid_thread_id",
                    "resource_link_unreadable",
                    "resource_link_external",
                    "resource_too_large",
                    "validation_failed",
                ],
                502: ["mcp_read_failed"],
                503: ["storage_unavailable"],
            }
        ),
    )
    async def read(
        self,
        slug: FromPath[str],
        sessionId: FromPath[str],
        messageId: FromPath[str],
        index: Annotated[int, Parameter(ge=0, le=10_000)],
        principal: NamedDependency[Principal],
        settings: NamedDependency[Settings],
        run_manager: NamedDependency[RunManager],
    ) -> ResourceLinkOut:
        """Read the resource link at ``index`` of a tool message's ``content`` (its position there)
        from the MCP server that returned it (``resources/read``), and keep it like a tool's media: text
        in the link, bytes as an upload of the thread, signed afresh whenever history shows it. A link
        read before answers from what was kept. Refused: a link a plugin tool returned, or one to the
        web (the spec leaves those to the client), a server since removed or disabled, a resource over
        the tool-result limits (by its declared ``size`` first), a server that fails or refuses."""
        services = run_manager.services
        link = await read_link(
            principal=principal,
            slug=slug,
            thread_id=sessionId,
            message_id=messageId,
            index=index,
            toolbox=services.toolbox,
            media=services.media,
            ttl_seconds=settings.signed_url_ttl_seconds,
        )
        return msgspec.convert(link, ResourceLinkOut, from_attributes=False, strict=False)
