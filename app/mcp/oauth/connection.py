"""A connection to an OAuth-protected MCP server: one per user who signs in (``authorization_code``), or
one for everyone (``client_credentials``), each request carrying the bearer token the SDK's OAuth provider
keeps (:mod:`iris.app.mcp.oauth.store`), refreshed by it when it expires.

When the user must sign in (no tokens yet, a refresh token that no longer works, a scope the server
now asks for), the SDK's provider discovers the authorization server (RFC 9728, RFC 8414 / OIDC), registers
or names Iris's client, and builds the authorization URL (PKCE S256, ``state``, RFC 8707 ``resource``, the
server's scopes). Iris puts that URL to the user as a question of the call (``authorize`` mode,
:mod:`iris.app.mcp.elicitation`): the run ends with an ``authorization_required`` interrupt, the call keeps
waiting in this process, and the callback (:mod:`iris.app.mcp.oauth.signin`) hands it the code, which the
provider checks (``state``, RFC 9207 ``iss``) and exchanges. The resuming run then gets the call's result.

A user with no tokens is signed in before the connection is made (the server refuses even ``initialize``);
a sign-in needed by a request of a live connection happens inside that request, when one call is in flight
to own it. Until a user's connection lists the tools, the run offers those any user's connection listed
last, or one ``{server}__sign_in`` tool when none has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from iris.app.mcp import elicitation
from iris.app.mcp.config import ServerConfig
from iris.app.mcp.connection import ServerConnection
from iris.app.mcp.elicitation import AskedCall, current_call, new_question
from iris.app.mcp.listing import McpTool
from iris.app.mcp.oauth import signin
from iris.app.mcp.oauth.grants import CLIENT_NAME, OAuthRuntime
from iris.app.mcp.oauth.server_auth import ServerAuth
from iris.app.mcp.oauth.store import GrantStorage
from iris.tools import LogHook, ProgressHook, TextContent, ToolFailed, ToolHints, ToolResult

log = logging.getLogger("iris.mcp")

SIGN_IN_TOOL = "sign_in"
PROBE = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
"""What the sign-in before connecting sends: any request the server answers 401 to starts the flow."""


class SignInNeeded(OAuthFlowError):
    """The server needs the user's sign-in and no call is there to ask the user."""


class SignInRefused(OAuthFlowError):
    """The user cancelled, the authorization server refused, or the sign-in expired."""


class AuthorizedConnection(ServerConnection):
    """See the module docstring. ``owner``: the user (``""``: the server's one identity); ``shared_tools``:
    the tool lists any connection of a server listed last, by server name (the pool's)."""

    def __init__(
        self,
        config: ServerConfig,
        environ: Mapping[str, str],
        *,
        runtime: OAuthRuntime,
        owner: str,
        shared_tools: dict[str, list[McpTool]],
        tools_ttl_seconds: float,
        log_dir: Path | None = None,
        ask_ttl_seconds: float = 3600.0,
    ) -> None:
        super().__init__(
            config,
            environ,
            tools_ttl_seconds=tools_ttl_seconds,
            log_dir=log_dir,
            ask_ttl_seconds=ask_ttl_seconds,
        )
        assert config.oauth is not None
        self.auth: ServerAuth = config.oauth
        self.owner = owner
        self._runtime = runtime
        self._shared = shared_tools
        self._needs_sign_in = False
        self._signing_in = asyncio.Lock()

    @property
    def busy(self) -> bool:
        """A call under way, or a sign-in waiting for its user."""
        return super().busy or self._signing_in.locked()

    async def signed_in(self) -> bool:
        """Whether requests outside a call (a resource link read on request) can go out as the user:
        nobody is there to ask, so without tokens they are refused rather than signed in."""
        return not self.auth.per_user or (not self._needs_sign_in and await self._storage().has_tokens())

    async def tools(self) -> list[McpTool]:
        """The user's own list once signed in; before that, the server's last list, or ``sign_in``."""
        if self.auth.per_user and not await self._storage().has_tokens():
            return self._shared.get(self.config.name) or [self._sign_in_tool()]
        found = await super().tools()
        if found:
            self._shared[self.config.name] = found
        return found or self._shared.get(self.config.name) or [self._sign_in_tool()]

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        progress: ProgressHook | None = None,
        log: LogHook | None = None,
    ) -> ToolResult:
        """A call, signing the user in first when needed (see the module docstring)."""
        if not self.auth.per_user:
            return await super().call(tool, arguments, progress=progress, log=log)
        asked = AskedCall(self.config.name, f"{self.config.name}__{tool}", self._ask_ttl)
        asked.start(self._signed_call(asked, tool, arguments, progress, log))
        return await asked.next(self.config.call_timeout_seconds)

    async def _signed_call(
        self,
        asked: AskedCall,
        tool: str,
        arguments: Mapping[str, Any],
        progress: ProgressHook | None,
        log: LogHook | None,
    ) -> ToolResult:
        """Sign in if there are no tokens (or the last connect found them refused), connect, call; a
        call that fails because the connection needs a new sign-in signs in and is made once more."""
        for attempt in (1, 2):
            if self._needs_sign_in or not await self._storage().has_tokens():
                await self._sign_in()
            try:
                client = await self._ensure()
                if tool == SIGN_IN_TOOL and all(listed.name != tool for listed in self._tools):
                    return self._signed_in_result()
                return await self._call(client, asked, tool, arguments, progress=progress, log=log)
            except ToolFailed:
                if not self._needs_sign_in or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _sign_in(self) -> None:
        """The whole sign-in, before connecting: a request the server refuses starts the provider's flow,
        whose authorization URL becomes the call's question; done when the tokens are stored."""
        assert self.config.url is not None
        async with self._signing_in:
            asking: dict[str, Any] = {}
            provider = self._provider(asking)
            try:
                async with httpx2.AsyncClient(
                    auth=provider, timeout=self.config.connect_timeout_seconds
                ) as http:
                    response = await http.post(
                        self.config.url,
                        json=PROBE,
                        headers={"accept": "application/json, text/event-stream"},
                    )
            except (OAuthFlowError, httpx2.HTTPError, ValueError) as exc:
                if "pending" in asking:
                    asking["pending"].finished(_reason(exc))
                raise ToolFailed(
                    f"signing in to {self.config.name} did not complete: {_reason(exc)}"
                ) from None
            if "pending" in asking:
                asking["pending"].finished(None if response.status_code not in (401, 403) else "refused")
            if response.status_code in (401, 403):
                raise ToolFailed(f"the MCP server {self.config.name} still refuses the user after signing in")
            self._needs_sign_in = False
        await self._restart()

    def _http_auth(self) -> httpx2.Auth:
        return self._provider()

    def _provider(self, asking: dict[str, Any] | None = None) -> OAuthClientProvider:
        """A provider over this user's stored grant (a new one per connection and per sign-in: each
        reads the tokens the last one stored); ``asking`` gets the sign-in under way, if one starts."""
        assert self.config.url is not None
        storage = self._storage()
        provider: OAuthClientProvider
        if self.auth.grant == "client_credentials":
            provider = ClientCredentialsOAuthProvider(
                server_url=self.config.url,
                storage=storage,
                client_id=self.auth.client_id or "",
                client_secret=self.auth.secret(self._environ) or "",
                token_endpoint_auth_method="client_secret_post",  # noqa: S106 -- a method name
                scope=self.auth.scope,
                issuer=self.auth.issuer,
            )
        else:
            secret = self.auth.secret(self._environ) if self.auth.client_id else None
            metadata = OAuthClientMetadata(
                client_name=CLIENT_NAME,
                redirect_uris=[self._runtime.redirect_uri],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                scope=self.auth.scope,
                token_endpoint_auth_method="client_secret_post" if secret else "none",
            )
            document = self._runtime.client_document_url
            redirect, callback = self._sign_in_handlers({} if asking is None else asking)
            provider = OAuthClientProvider(
                self.config.url,
                metadata,
                storage,
                redirect_handler=redirect,
                callback_handler=callback,
                client_metadata_url=document if document.startswith("https://") else None,
            )
        storage.provider = provider
        return provider

    def _storage(self) -> GrantStorage:
        return GrantStorage(self._runtime, self.owner, self.config.name, self.auth)

    def _sign_in_handlers(self, asking: dict[str, Any]) -> tuple[Any, Any]:
        """The provider's redirect and callback handlers: the authorization URL put to the call that
        needs it as an ``authorize`` question; the code awaited from the callback (or the user's cancel,
        or the TTL). ``asking`` gets the call, question and sign-in."""

        async def redirect(url: str) -> None:
            asked = current_call(self._asked)
            if asked is None:
                self._needs_sign_in = True
                raise SignInNeeded(f"the MCP server {self.config.name} needs the user to sign in")
            state = parse_qs(urlparse(url).query).get("state", [""])[0]
            question = new_question(
                asked,
                mode="authorize",
                message=f"Sign in to {self.config.name} to let Iris use its tools for you, then continue.",
                url=url,
            )
            answer = asked.put(question)
            asked.asking = False  # the call is busy at the authorization server, not idle
            pending = signin.expect(state, self.owner, self.config.name, self._runtime.ttl_seconds)
            asking.update(asked=asked, question=question, answer=answer, pending=pending)

        async def callback() -> AuthorizationCodeResult:
            asked: AskedCall = asking["asked"]
            question_id: str = asking["question"].id
            pending: signin.PendingSignIn = asking["pending"]
            try:
                given = await self._code(pending, asking["answer"])
            except BaseException as exc:
                signin.forget(pending.state)
                pending.finished(_reason(exc))
                asked.settle(question_id)
                raise
            # The resume that follows still finds the call (its answer waits until then, or the TTL).
            asyncio.get_running_loop().call_later(self._runtime.ttl_seconds, asked.settle, question_id)
            asyncio.get_running_loop().call_later(3, pending.finished, None)  # a sign-in inside a request
            return AuthorizationCodeResult(code=given.code or "", state=given.state, iss=given.iss)

        return redirect, callback

    async def _code(
        self, pending: signin.PendingSignIn, answer: asyncio.Future[elicitation.Answer]
    ) -> signin.CallbackParams:
        """The callback's parameters; :class:`SignInRefused` when the user cancels, the server refuses,
        or nothing comes within the TTL. A resume that says "resolved" before the callback waits on."""
        try:
            async with asyncio.timeout(self._runtime.ttl_seconds):
                either: set[asyncio.Future[Any]] = {pending.given, answer}
                done, _ = await asyncio.wait(either, return_when="FIRST_COMPLETED")
                if pending.given not in done and answer.result().action != "accept":
                    raise SignInRefused("the user cancelled the sign-in")
                given = await pending.given
        except TimeoutError:
            raise SignInRefused("the sign-in expired") from None
        if given.error is not None:
            raise SignInRefused(f"the authorization server answered {given.error}")
        if not given.code:
            raise SignInRefused("the authorization server sent no code")
        return given

    async def _restart(self) -> None:
        """Connect afresh with the new tokens (a connection attempt that failed for want of them may be
        waiting out its backoff)."""
        task, self._task = self._task, None
        self._retry_at, self._failures = 0.0, 0
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                async with asyncio.timeout(5):
                    await task

    def _sign_in_tool(self) -> McpTool:
        name = self.config.name
        return McpTool(
            server=name,
            name=SIGN_IN_TOOL,
            description=(
                f"Sign the user in to {name}: its tools are offered once they have. Call this when the"
                f" user asks for anything {name} does."
            ),
            parameters={"type": "object", "properties": {}},
            hints=ToolHints(read_only=True),
        )

    def _signed_in_result(self) -> ToolResult:
        names = ", ".join(f"{self.config.name}__{tool.name}" for tool in self._tools) or "none"
        text = f"Signed in to {self.config.name}. Its tools, offered from the user's next message: {names}."
        return ToolResult(summary=f"signed in to {self.config.name}", content=(TextContent(text=text),))


def _reason(exc: BaseException) -> str:
    """Why a sign-in failed, in words that hold no token."""
    if isinstance(exc, httpx2.HTTPError):
        return type(exc).__name__
    return str(exc) or type(exc).__name__
