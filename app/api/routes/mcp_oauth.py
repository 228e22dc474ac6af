"""Users' sign-ins at OAuth-protected MCP servers: the authorization server's redirect back to Iris
(``GET /api/mcp/oauth/callback``), Iris's client ID metadata document, and the caller's connections
(listed, revoked). See :mod:`iris.app.mcp.oauth`."""

from __future__ import annotations

import asyncio
import html
from typing import Annotated, Any

from litestar import Controller, Response, delete, get
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import FromPath, QueryParameter

from iris.app.api.openapi import documented
from iris.app.errors import Forbidden, NotFound, ServiceUnavailable
from iris.app.mcp.oauth import signin
from iris.app.mcp.oauth.grants import OAuthRuntime, client_document, list_grants, revoke_grant
from iris.app.runs import Toolbox
from iris.app.schemas.mcp import McpConnectionList, McpConnectionOut
from iris.app.security.auth import Principal

OUTCOME_SECONDS = 10.0
"""How long the callback page waits to say whether the code was exchanged."""
_Param = Annotated[str | None, QueryParameter(schema_extra={"maxLength": 4000})]
_HTML = "text/html; charset=utf-8"
_PAGE_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


class McpOAuthController(Controller):
    """``/api/mcp``: the sign-in callback and document (no bearer token: a browser arrives there), and
    ``/api/mcp/connections`` (the caller's own)."""

    path = "/api/mcp"
    tags = ["Tools"]
    signature_types = [Principal, Toolbox]

    @get(
        "/oauth/callback",
        operation_id="McpOAuthCallback",
        operation_class=documented(
            ok={_HTML: Schema(type=OpenAPIType.STRING)},
            problems={400: ["malformed_body"], 403: ["oauth_state_invalid"]},
        ),
    )
    async def callback(
        self,
        oauth_state: Annotated[
            str, QueryParameter(name="state", schema_extra={"minLength": 1, "maxLength": 4000})
        ],
        code: _Param = None,
        iss: _Param = None,
        error: _Param = None,
        error_description: Annotated[
            str | None, QueryParameter(name="error_description", schema_extra={"maxLength": 4000})
        ] = None,
    ) -> Response[str]:
        """Where an authorization server sends the user back after signing in to an MCP server: the code
        goes to the call waiting for it (its ``state`` is single use, bound to the user and server, and
        expires with the interrupt); a page says to go back and continue. 403 ``oauth_state_invalid``
        for a state no sign-in waits for (nothing is stored)."""
        given = signin.CallbackParams(
            state=oauth_state, code=code, iss=iss, error=error, error_description=error_description
        )
        try:
            pending = signin.deliver(given)
        except signin.SignInUnknown as exc:
            raise Forbidden(f"This sign-in link is not valid: {exc}.", code="oauth_state_invalid") from None
        try:
            async with asyncio.timeout(OUTCOME_SECONDS):
                problem = await asyncio.shield(pending.outcome)
        except TimeoutError:
            problem = None
        server = html.escape(pending.server)
        if problem is None and error is None:
            text = f"Signed in to {server}. Go back to the chat and continue."
        else:
            text = f"Signing in to {server} did not complete: {html.escape(problem or error or '')}."
        page = f"<!doctype html><meta charset=utf-8><title>Iris</title><p>{text}</p>"
        return Response(page, media_type=_HTML, headers=_PAGE_HEADERS)

    @get(
        "/oauth/client-metadata.json",
        operation_id="McpOAuthClientMetadata",
        operation_class=documented(),
    )
    async def client_metadata(self, toolbox: NamedDependency[Toolbox]) -> dict[str, Any]:
        """Iris's OAuth client ID metadata document: its URL is the ``client_id`` Iris uses at an
        authorization server that supports such documents (a public client; PKCE protects the code)."""
        return client_document(_runtime(toolbox))

    @get(
        "/connections",
        operation_id="ListMcpConnections",
        security=[{"BearerToken": []}],
        operation_class=documented(),
    )
    async def list_connections(
        self, principal: NamedDependency[Principal], toolbox: NamedDependency[Toolbox]
    ) -> McpConnectionList:
        """The OAuth-protected MCP servers the caller signed in to: scopes, expiry, issuer; never a token."""
        grants = await list_grants(_runtime(toolbox), principal.user_id)
        return McpConnectionList(
            connections=[
                McpConnectionOut(
                    server=grant.server,
                    scopes=grant.scopes,
                    connected_at=grant.connected_at,
                    expires_at=grant.expires_at,
                    issuer=grant.issuer,
                )
                for grant in grants
            ]
        )

    @delete(
        "/connections/{name:str}",
        operation_id="RevokeMcpConnection",
        status_code=204,
        security=[{"BearerToken": []}],
        operation_class=documented(problems={404: ["mcp_connection_not_found"]}),
    )
    async def revoke_connection(
        self,
        principal: NamedDependency[Principal],
        name: FromPath[str],
        toolbox: NamedDependency[Toolbox],
    ) -> None:
        """Sign the caller out of one server: the tokens are revoked at its authorization server (when
        it offers revocation, RFC 7009) and deleted; the next call asks the user to sign in again."""
        if not await revoke_grant(_runtime(toolbox), principal.user_id, name):
            raise NotFound("You are not signed in to this MCP server.", code="mcp_connection_not_found")
        toolbox.pool.retire(name, principal.user_id)


def _runtime(toolbox: Toolbox) -> OAuthRuntime:
    runtime = toolbox.pool.oauth
    if runtime is None:
        raise ServiceUnavailable("MCP sign-in is not set up on this server.", code="mcp_oauth_unavailable")
    return runtime
