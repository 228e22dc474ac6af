"""What the OAuth pieces share (:class:`OAuthRuntime`: the database, the cipher, Iris's own URLs), and a
user's connections as ``/api/mcp/connections`` shows and revokes them.

Revoking asks the authorization server to revoke the refresh token (and the access token) when it offers
RFC 7009 revocation, then deletes the row whatever it answered: the user's intent is that Iris forgets.
No token is ever logged; a revocation failure is logged by its status alone.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from iris.app.mcp.oauth.keys import TokenCipher
from iris.app.persistence.db import session_scope
from iris.app.persistence.repositories import McpGrantRepository
from iris.app.settings import Settings

log = logging.getLogger("iris.mcp")

CALLBACK_PATH = "/api/mcp/oauth/callback"
CLIENT_DOCUMENT_PATH = "/api/mcp/oauth/client-metadata.json"
CLIENT_NAME = "Iris"


@dataclass(frozen=True, slots=True)
class OAuthRuntime:
    """Everything a per-user connection needs beyond its server's configuration: where tokens are kept
    and sealed, Iris's public URL (the redirect URI and the client ID metadata document are under it),
    how long a sign-in may take (the interrupt TTL), and the environment ``${VAR}`` is read from."""

    alchemy: SQLAlchemyAsyncConfig
    cipher: TokenCipher
    public_url: str
    ttl_seconds: float
    environ: Mapping[str, str]

    @classmethod
    def from_settings(
        cls, settings: Settings, alchemy: SQLAlchemyAsyncConfig, environ: Mapping[str, str]
    ) -> OAuthRuntime:
        """The runtime of an app; :class:`ValueError` for an unusable ``IRIS_MCP_TOKEN_KEY``."""
        return cls(
            alchemy=alchemy,
            cipher=TokenCipher.from_settings(settings.mcp_token_key, settings.jwt_secret),
            public_url=settings.effective_public_url,
            ttl_seconds=settings.interrupt_ttl_seconds,
            environ=environ,
        )

    @property
    def redirect_uri(self) -> str:
        return self.public_url.rstrip("/") + CALLBACK_PATH

    @property
    def client_document_url(self) -> str:
        return self.public_url.rstrip("/") + CLIENT_DOCUMENT_PATH


def client_document(runtime: OAuthRuntime) -> dict[str, Any]:
    """Iris's OAuth client ID metadata document: the authorization server reads it at the URL that is
    the ``client_id`` (a public client; PKCE protects the code)."""
    return {
        "client_id": runtime.client_document_url,
        "client_name": CLIENT_NAME,
        "redirect_uris": [runtime.redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


@dataclass(frozen=True, slots=True)
class GrantView:
    """One connection as its user sees it: never a token."""

    server: str
    scopes: list[str]
    expires_at: dt.datetime | None
    issuer: str | None
    connected_at: dt.datetime


async def list_grants(runtime: OAuthRuntime, owner: str) -> list[GrantView]:
    """The servers ``owner`` is signed in to."""
    async with session_scope(runtime.alchemy) as db:
        rows = await McpGrantRepository(session=db).owned(owner)
        return [
            GrantView(
                server=row.server,
                scopes=(row.scope or "").split(),
                expires_at=row.expires_at,
                issuer=row.issuer,
                connected_at=row.created_at,
            )
            for row in rows
        ]


async def revoke_grant(runtime: OAuthRuntime, owner: str, server: str) -> bool:
    """Revoke ``owner``'s tokens at ``server``'s authorization server (when it offers revocation) and
    delete them; whether there was anything to revoke."""
    async with session_scope(runtime.alchemy) as db:
        repo = McpGrantRepository(session=db)
        row = await repo.find(owner, server)
        if row is None or row.sealed_tokens is None:
            return False
        sealed = runtime.cipher.open(row.sealed_tokens)
        endpoint = row.revocation_endpoint
        await repo.remove(owner, server)
    if sealed is not None and endpoint:
        async with httpx.AsyncClient() as http:
            await _revoke_at(http, endpoint, sealed)
    return True


async def _revoke_at(http: httpx.AsyncClient, endpoint: str, sealed: Mapping[str, Any]) -> None:
    """RFC 7009: the refresh token first (revoking it ends the grant), then the access token."""
    tokens: Mapping[str, Any] = sealed.get("tokens") or {}
    client: Mapping[str, Any] = sealed.get("client") or {}
    form = {"client_id": str(client.get("client_id", ""))}
    if client.get("client_secret"):
        form["client_secret"] = str(client["client_secret"])
    for kind in ("refresh_token", "access_token"):
        if not tokens.get(kind):
            continue
        try:
            response = await http.post(
                endpoint, data={**form, "token": str(tokens[kind]), "token_type_hint": kind}, timeout=10
            )
            if response.status_code >= 400:
                log.info("mcp: revoking a %s answered %d", kind, response.status_code)
        except httpx.HTTPError as exc:
            log.info("mcp: revoking a %s failed: %s", kind, type(exc).__name__)
