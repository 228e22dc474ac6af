"""The MCP SDK's ``TokenStorage`` over ``mcp_grants``: one user's tokens at one server, sealed
(:mod:`iris.app.mcp.oauth.keys`), and the server's client registration, shared by its users.

A client the admin configured is never stored (its secret stays ``${VAR}`` in the server's settings); one
registered dynamically (RFC 7591) or named by Iris's client ID metadata document is kept on the server's
own row (owner ``""``), so every user of the server reuses it.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError

from iris.app.mcp.oauth.grants import OAuthRuntime
from iris.app.mcp.oauth.server_auth import ServerAuth
from iris.app.persistence.db import session_scope
from iris.app.persistence.mcp_grant_models import McpGrant
from iris.app.persistence.repositories import McpGrantRepository

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider

SERVER_ROW = ""
"""The owner of a server's own row: its shared client registration (and client-credentials tokens)."""


class GrantStorage:
    """Tokens of ``owner`` (``""``: the server's one identity) at ``server``. ``provider`` is set once the
    SDK's provider exists: its discovered metadata says the issuer and revocation endpoint to keep."""

    def __init__(self, runtime: OAuthRuntime, owner: str, server: str, auth: ServerAuth) -> None:
        self.runtime = runtime
        self.owner = owner
        self.server = server
        self.auth = auth
        self.provider: OAuthClientProvider | None = None
        self._client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        row = await self._row(self.owner)
        sealed = self.runtime.cipher.open(row.sealed_tokens) if row is not None else None
        if row is None or sealed is None:
            return None
        try:
            tokens = OAuthToken.model_validate(sealed.get("tokens") or {})
        except ValidationError:
            return None
        if self.provider is not None and row.expires_at is not None:
            self.provider.context.token_expiry_time = row.expires_at.timestamp()  # the SDK keeps no expiry
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        now = dt.datetime.now(dt.UTC)
        expires = now + dt.timedelta(seconds=int(tokens.expires_in)) if tokens.expires_in else None
        client = self.provider.context.client_info if self.provider is not None else None
        meta = self.provider.context.oauth_metadata if self.provider is not None else None
        sealed: dict[str, Any] = {"tokens": tokens.model_dump(mode="json", exclude_none=True)}
        if client is not None:
            sealed["client"] = {"client_id": client.client_id, "client_secret": client.client_secret}

        def fill(row: McpGrant) -> None:
            row.sealed_tokens = self.runtime.cipher.seal(sealed)
            row.scope = tokens.scope
            row.expires_at = expires
            if meta is not None:
                row.issuer = str(meta.issuer)
                row.revocation_endpoint = str(meta.revocation_endpoint) if meta.revocation_endpoint else None

        await self._upsert(self.owner, fill)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.auth.client_id is not None:
            secret = self.auth.secret(self.runtime.environ)
            return OAuthClientInformationFull(
                client_id=self.auth.client_id,
                client_secret=secret,
                redirect_uris=[self.runtime.redirect_uri],  # type: ignore[list-item]
                token_endpoint_auth_method="client_secret_post" if secret else "none",
            )
        row = await self._row(SERVER_ROW)
        sealed = self.runtime.cipher.open(row.sealed_client) if row is not None else None
        if sealed is None:
            return None
        try:
            return OAuthClientInformationFull.model_validate(sealed)
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.auth.client_id is not None:
            return  # the admin's client: nothing to keep
        sealed = client_info.model_dump(mode="json", exclude_none=True)

        def fill(row: McpGrant) -> None:
            row.sealed_client = self.runtime.cipher.seal(sealed)

        await self._upsert(SERVER_ROW, fill)

    async def has_tokens(self) -> bool:
        """Whether this owner holds tokens that open with the current key."""
        row = await self._row(self.owner)
        return row is not None and self.runtime.cipher.open(row.sealed_tokens) is not None

    async def _row(self, owner: str) -> McpGrant | None:
        async with session_scope(self.runtime.alchemy) as db:
            return await McpGrantRepository(session=db).find(owner, self.server)

    async def _upsert(self, owner: str, fill: Any) -> None:
        async with session_scope(self.runtime.alchemy) as db:
            repo = McpGrantRepository(session=db)
            row = await repo.find(owner, self.server)
            if row is None:
                row = McpGrant(owner_id=owner, server=self.server)
                fill(row)
                await repo.add(row)
            else:
                fill(row)
                await repo.update(row)
