"""An MCP server protected by OAuth, with its own authorization server, for the tests: built with the MCP
SDK's server auth pieces (``MCPServer`` with an ``OAuthAuthorizationServerProvider``: RFC 9728 protected
resource metadata, RFC 8414 metadata, dynamic registration, PKCE, revocation) on one loopback origin.

Run as ``python tests/support/oauth_mcp_server.py --port N``. Its issuer is ``http://127.0.0.1:N`` and the
resource ``http://127.0.0.1:N/mcp``, which answers 401 with ``WWW-Authenticate: Bearer
resource_metadata=…`` until a token is sent. ``/authorize`` sends the browser to ``/login?tx=…``, where
the test says who signs in (``&user=alice``) and is sent on to the client's redirect URI with ``code``,
``state`` and ``iss`` (RFC 9207). Tools: ``whoami`` (the signed-in user and the token's scopes) and
``audit_log``, which needs the ``mcp:admin`` scope: without it the request is refused 403
``insufficient_scope`` (a step-up). ``ACCESS_TTL`` sets access tokens' lifetime in seconds.
``CC_CLIENT_ID``/``CC_CLIENT_SECRET`` name a client that may use the client-credentials grant (as the
user ``service``). ``POST /test/forget-refresh`` makes every refresh token invalid. ``MARK_DIR`` gets
``registered``, ``refreshed``, ``revoked.{kind}``, ``cc.issued`` and ``authorized.{user}`` marks, and
every token it issued in ``issued`` (one a line).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

import mcp_types as mt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

MARKS = Path(os.environ.get("MARK_DIR", "."))
ACCESS_TTL = int(os.environ.get("ACCESS_TTL", "3600"))
SCOPES = ["mcp:read", "mcp:admin"]
GUARDED = ("/token", "/mcp", "/revoke")


def _mark(name: str, text: str = "") -> None:
    (MARKS / name).write_text(text or str(time.time()))


CIMD = os.environ.get("CIMD_DOCUMENT")
"""A client ID metadata document the test fetched from Iris (the test's Iris has no socket to fetch it
from): when set, the metadata advertises ``client_id_metadata_document_supported`` and a ``client_id``
that is its URL is that document's client."""


def _client_document(client_id: str) -> dict[str, Any] | None:
    if CIMD is None or not client_id.startswith("https://") or not Path(CIMD).exists():
        return None
    document: dict[str, Any] = json.loads(Path(CIMD).read_text())
    return document if document.get("client_id") == client_id else None


class AutoApproveProvider:
    """An in-memory authorization server: every registered client is approved at ``/login``."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.users: dict[str, str] = {}  # token or code → user
        if "STATIC_CLIENT" in os.environ:  # a client an admin registered by hand (id, secret, redirects)
            static = OAuthClientInformationFull.model_validate(json.loads(os.environ["STATIC_CLIENT"]))
            self.clients[static.client_id or ""] = static

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        document = _client_document(client_id)
        if document is not None:
            _mark("cimd.used", client_id)
            return OAuthClientInformationFull.model_validate({**document, "scope": " ".join(SCOPES)})
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        client_info.scope = " ".join(SCOPES)  # RFC 7591 lets a server widen it: a step-up may ask for more
        self.clients[client_info.client_id] = client_info
        _mark("registered", client_info.client_id)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        tx = secrets.token_urlsafe(16)
        self.pending[tx] = (client.client_id or "", params)
        return f"{self.issuer}/login?tx={tx}"

    def approve(self, tx: str, user: str) -> str:
        client_id, params = self.pending.pop(tx)
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp:read"],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.users[code] = user
        _mark(f"authorized.{user}", " ".join(params.scopes or []) + f"\nresource={params.resource}")
        query = {"code": code, "iss": self.issuer}
        if params.state is not None:
            query["state"] = params.state
        return f"{params.redirect_uri}?{urlencode(query)}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        user = self.users.pop(authorization_code.code)
        return self.issue(
            client.client_id or "", user, authorization_code.scopes, authorization_code.resource
        )

    def issue(self, client_id: str, user: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at_{secrets.token_urlsafe(24)}", f"rt_{secrets.token_urlsafe(24)}"
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + ACCESS_TTL,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        self.users[access] = self.users[refresh] = user
        with (MARKS / "issued").open("a") as issued:  # the tests look for them where they must not be
            issued.write(f"{access}\n{refresh}\n")
        return OAuthToken(
            access_token=access,
            expires_in=ACCESS_TTL,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token unknown")
        user = self.users[refresh_token.token]
        _mark("refreshed", user)
        return self.issue(client.client_id or "", user, scopes or refresh_token.scopes, None)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        kind = "refresh" if isinstance(token, RefreshToken) else "access"
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)
        _mark(f"revoked.{kind}", self.users.get(token.token, ""))


def build(port: int) -> Any:
    issuer = f"http://127.0.0.1:{port}"
    provider = AutoApproveProvider(issuer)
    server = MCPServer(
        "secure",
        auth_server_provider=provider,  # type: ignore[arg-type]
        auth=AuthSettings(
            issuer_url=issuer,  # type: ignore[arg-type]
            resource_server_url=f"{issuer}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=SCOPES, default_scopes=["mcp:read"]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=["mcp:read"],
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Who the bearer token was issued to, and its scopes."""
        token = get_access_token()
        assert token is not None
        return f"user={provider.users.get(token.token)} scopes={' '.join(sorted(token.scopes))}"

    @server.tool()
    def profile() -> mt.CallToolResult:
        """A link to the bearer's profile (read on request, as the user who reads it)."""
        link = mt.ResourceLink(uri="secure://profile", name="profile", mime_type="text/plain")
        return mt.CallToolResult(content=[mt.TextContent(text="Your profile:"), link])

    @server.resource("secure://profile", mime_type="text/plain")
    def profile_text() -> str:
        token = get_access_token()
        assert token is not None
        return f"profile of {provider.users.get(token.token)}"

    @server.tool()
    def audit_log() -> str:
        """An admin-only tool (needs mcp:admin)."""
        return "audit: all quiet"

    @server.custom_route("/login", methods=["GET"])  # type: ignore[untyped-decorator]
    async def login(request: Request) -> Response:
        tx, user = request.query_params.get("tx", ""), request.query_params.get("user", "anyone")
        if tx not in provider.pending:
            return JSONResponse({"error": "unknown tx"}, status_code=400)
        return RedirectResponse(provider.approve(tx, user), status_code=302)

    @server.custom_route("/test/forget-refresh", methods=["POST"])  # type: ignore[untyped-decorator]
    async def forget_refresh(request: Request) -> Response:
        provider.refresh.clear()
        return JSONResponse({"forgotten": True})

    return _guarded(server.streamable_http_app(), provider, issuer)


def _guarded(app: Any, provider: AutoApproveProvider, issuer: str) -> Any:
    """The client-credentials grant (the SDK's token endpoint has none), ``audit_log``'s scope check, and
    a public client's revocation (see below), around the SDK's app."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (
            CIMD is not None
            and scope["type"] == "http"
            and scope["path"] == "/.well-known/oauth-authorization-server"
        ):
            await _with_cimd(app, scope, receive, send)
            return
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] not in ("/token", "/mcp", "/revoke")
        ):
            await app(scope, receive, send)
            return
        body, replay = await _body(receive)
        if scope["path"] == "/revoke" and b"client_secret=" not in body:
            # The SDK's revocation handler requires the field even of a public client (RFC 7009 does not).
            _, replay = await _body(_once(body + b"&client_secret="))
        if scope["path"] == "/token":
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            if form.get("grant_type") == "client_credentials":
                await _client_credentials(form, provider)(scope, replay, send)
                return
        elif _needs_admin(body, scope, provider):
            metadata = f"{issuer}/.well-known/oauth-protected-resource/mcp"
            challenge = 'Bearer error="insufficient_scope", scope="mcp:read mcp:admin", ' + (
                f'resource_metadata="{metadata}"'
            )
            refused = JSONResponse({"error": "insufficient_scope"}, status_code=403)
            refused.headers["WWW-Authenticate"] = challenge
            await refused(scope, replay, send)
            return
        await app(scope, replay, send)

    return guarded


async def _with_cimd(app: Any, scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The SDK's authorization server metadata, saying it takes client ID metadata documents."""
    sent: list[dict[str, Any]] = []

    async def keep(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, keep)
    metadata = json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))
    metadata["client_id_metadata_document_supported"] = True
    await JSONResponse(metadata)(scope, receive, send)


async def _body(receive: Any) -> tuple[bytes, Any]:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if sent:
            following: dict[str, Any] = await receive()
            return following
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, replay


def _once(body: bytes) -> Any:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _needs_admin(body: bytes, scope: dict[str, Any], provider: AutoApproveProvider) -> bool:
    try:
        message = json.loads(body)
    except ValueError:
        return False
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return False
    if (message.get("params") or {}).get("name") != "audit_log":
        return False
    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    token = provider.access.get(headers.get("authorization", "").removeprefix("Bearer "))
    return token is None or "mcp:admin" not in token.scopes


def _client_credentials(form: dict[str, str], provider: AutoApproveProvider) -> JSONResponse:
    expected = (os.environ.get("CC_CLIENT_ID"), os.environ.get("CC_CLIENT_SECRET"))
    if expected[0] is None or (form.get("client_id"), form.get("client_secret")) != expected:
        return JSONResponse({"error": "invalid_client"}, status_code=401)
    scopes = (form.get("scope") or "mcp:read").split()
    token = provider.issue(expected[0], "service", scopes, form.get("resource"))
    _mark("cc.issued", " ".join(scopes))
    return JSONResponse(token.model_dump(exclude_none=True), headers={"Cache-Control": "no-store"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    import uvicorn

    uvicorn.run(build(args.port), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
