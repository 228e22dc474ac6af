"""How Iris authorizes at one OAuth-protected MCP server, as the admin configured it (the server's
``oauth`` object): which grant, which client, which scopes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Grant = Literal["authorization_code", "client_credentials"]


@dataclass(frozen=True, slots=True)
class ServerAuth:
    """``grant``: ``authorization_code`` (each user signs in) or ``client_credentials`` (one identity for
    everyone, the admin's client). ``client_id``/``client_secret``: a client the admin registered at the
    authorization server (the secret written ``${VAR}``); without one Iris uses its client ID metadata
    document where the server supports that, else registers itself dynamically (RFC 7591).
    ``scopes``: asked for beside those the server names (space-separated on the wire)."""

    grant: Grant = "authorization_code"
    client_id: str | None = None
    client_secret: str | None = None
    scopes: tuple[str, ...] = ()
    issuer: str | None = None
    """The authorization server the admin's client belongs to (its secret is sent nowhere else)."""

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> ServerAuth | None:
        if value is None:
            return None
        grant = value.get("grant", "authorization_code")
        return cls(
            grant="client_credentials" if grant == "client_credentials" else "authorization_code",
            client_id=value.get("clientId"),
            client_secret=value.get("clientSecret"),
            scopes=tuple(value.get("scopes") or ()),
            issuer=value.get("issuer"),
        )

    @property
    def per_user(self) -> bool:
        """Whether each user signs in (a connection per user), rather than one identity for all."""
        return self.grant == "authorization_code"

    @property
    def scope(self) -> str | None:
        return " ".join(self.scopes) or None

    def secret(self, environ: Mapping[str, str]) -> str | None:
        """The client secret with ``${VAR}`` expanded (never stored expanded)."""
        from iris.app.mcp.config import expand

        if self.client_secret is None:
            return None
        return expand(self.client_secret, environ, kind="headers", key="oauth.clientSecret")
