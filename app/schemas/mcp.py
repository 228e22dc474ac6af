"""MCP servers and tools as the admin API shows and takes them."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec

from iris.app.errors import Unprocessable
from iris.providers.wire import RequestStruct, WireStruct

ServerName = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9_-]{1,32}$")]
ApprovalRule = Literal["always", "never", "destructive"]
ConnectSeconds = Annotated[float, msgspec.Meta(gt=0, le=120)]
CallSeconds = Annotated[float, msgspec.Meta(gt=0, le=3600)]
Url = Annotated[str, msgspec.Meta(pattern=r"^https?://[!-~]+$", max_length=2000)]
"""Printable ASCII without spaces: one character class Python's ``re`` and the document's ECMA-262 regular
expressions read alike (their ``\\s`` differ: U+0085 is space to one, not to the other)."""
Command = Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]
HeaderName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")]
EnvName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,100}$")]


class _ServerFields(RequestStruct, kw_only=True):
    """What both transports take: ``approval`` for every tool of the server (``destructive``, the
    default, asks unless the tool says it is read-only), ``toolApproval`` per tool over it, and the
    timeouts of connecting and of one call."""

    name: ServerName
    approval: ApprovalRule = "destructive"
    tool_approval: dict[str, ApprovalRule] = msgspec.field(default_factory=dict)
    connect_timeout_seconds: ConnectSeconds = 10.0
    call_timeout_seconds: CallSeconds = 60.0
    enabled: bool = True


Scope = Annotated[str, msgspec.Meta(pattern=r"^[!#-\[\]-~]{1,200}$")]
"""An OAuth scope token (RFC 6749 §3.3: printable ASCII but space, ``"`` and ``\\``)."""


class OAuthSettings(RequestStruct, kw_only=True):
    """How Iris authorizes at an OAuth-protected server. ``grant``: ``authorization_code`` (each user
    signs in; a call they are not signed in for ends the run with an ``authorization_required``
    interrupt) or ``client_credentials`` (one identity for everyone, no interrupt; needs ``clientId`` and
    ``clientSecret``, or the server stays down saying so). ``clientId``/``clientSecret``: a client
    registered at the authorization server (the secret must name a ``${VAR}``: it is never stored);
    without them Iris names its client ID metadata document where the server supports that, else
    registers itself dynamically (RFC 7591). ``scopes``: asked for with the client-credentials grant
    (a sign-in asks for the scopes the server names). ``issuer``: the authorization server the client
    belongs to; with it, the client's secret is only ever sent to that server."""

    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    client_id: Annotated[str, msgspec.Meta(min_length=1, max_length=500)] | None = None
    client_secret: Annotated[str, msgspec.Meta(pattern=r"\$\{", max_length=500)] | None = None
    scopes: Annotated[list[Scope], msgspec.Meta(max_length=50)] = msgspec.field(default_factory=list)
    issuer: Url | None = None


class HttpServerCreate(_ServerFields, tag="http", tag_field="transport", kw_only=True):
    """A Streamable HTTP server: ``headers`` values may name environment variables
    (``"Bearer ${GITHUB_TOKEN}"``), expanded at each connect and never stored expanded; ``oauth`` when
    the server is protected by OAuth (``{}`` for a per-user sign-in with Iris's own client)."""

    url: Url
    headers: dict[HeaderName, str] = msgspec.field(default_factory=dict)
    oauth: OAuthSettings | None = None


class StdioServerCreate(_ServerFields, tag="stdio", tag_field="transport", kw_only=True):
    """A server Iris starts as a subprocess and talks to over stdin/stdout; ``env`` values may name
    environment variables like headers do (the child gets only these and a minimal PATH/HOME set)."""

    command: Command
    args: list[str] = msgspec.field(default_factory=list)
    env: dict[EnvName, str] = msgspec.field(default_factory=dict)


McpServerCreate = HttpServerCreate | StdioServerCreate


class McpServerUpdate(RequestStruct, kw_only=True):
    """``PATCH /api/mcp-servers/{name}``: only the fields present change (a transport's own fields
    only on a server of that transport)."""

    approval: ApprovalRule | msgspec.UnsetType = msgspec.UNSET
    tool_approval: dict[str, ApprovalRule] | msgspec.UnsetType = msgspec.UNSET
    connect_timeout_seconds: ConnectSeconds | msgspec.UnsetType = msgspec.UNSET
    call_timeout_seconds: CallSeconds | msgspec.UnsetType = msgspec.UNSET
    enabled: bool | msgspec.UnsetType = msgspec.UNSET
    url: Url | msgspec.UnsetType = msgspec.UNSET
    headers: dict[HeaderName, str] | msgspec.UnsetType = msgspec.UNSET
    command: Command | msgspec.UnsetType = msgspec.UNSET
    args: list[str] | msgspec.UnsetType = msgspec.UNSET
    env: dict[EnvName, str] | msgspec.UnsetType = msgspec.UNSET
    oauth: OAuthSettings | msgspec.UnsetType | None = msgspec.UNSET


class McpHealth(WireStruct, omit_defaults=True):
    """The server as this process sees it: ``idle`` (not used yet), ``connecting``, ``connected`` or
    ``down`` (``error`` says why; ``retryInSeconds`` when the next try is); ``tools``, how many it listed,
    is always sent (0 included). ``protocolVersion``: the MCP revision the connection negotiated
    (``2025-11-25`` and older: session-based; ``2026-07-28``: stateless)."""

    state: Literal["idle", "connecting", "connected", "down", "disabled"]
    tools: int
    error: str | None = None
    connected_at: str | None = None
    retry_in_seconds: float | None = None
    protocol_version: str | None = None


class IconOut(WireStruct, omit_defaults=True):
    """An icon an MCP server gives a tool: an ``https:`` or ``data:`` URI, as the server sent it (an SVG
    may hold script: show it as an image, never inline)."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: str | None = None


class ToolOut(WireStruct, omit_defaults=True):
    """A tool an admin can give an agent: its name as agents list it, where it comes from (``builtin``,
    ``plugin:{module}``, ``mcp:{server}``), its argument schema, the approval rule that applies and
    whether a call asks first (``needsApproval``: the rule read with the tool's hints). ``available``:
    whether Iris can call it at all; one that is not (an MCP tool that runs only as a task) is never
    offered to a model, and ``unavailableReason`` says why. ``title`` and ``icons``: how an MCP tool
    shows itself to people (its display name; icons with ``src``, ``mimeType``, ``sizes``, ``theme``)."""

    name: str
    source: str
    description: str
    parameters: dict[str, Any]
    approval: ApprovalRule
    needs_approval: bool
    timeout_seconds: float
    available: bool
    unavailable_reason: str | None = None
    hints: dict[str, bool] | None = None
    title: str | None = None
    icons: list[IconOut] | None = None


class McpServerOut(WireStruct, omit_defaults=True):
    """An MCP server: its settings as written (``${VAR}`` unexpanded), its health here, and the tools
    it listed last."""

    id: str
    name: str
    transport: Literal["stdio", "http"]
    approval: ApprovalRule
    tool_approval: dict[str, ApprovalRule]
    connect_timeout_seconds: float
    call_timeout_seconds: float
    enabled: bool
    from_file: bool
    health: McpHealth
    tools: list[ToolOut]
    created_at: dt.datetime
    updated_at: dt.datetime
    url: str | None = None
    headers: dict[str, str] | None = None
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    oauth: OAuthSettings | None = None


class McpConnectionOut(WireStruct, omit_defaults=True):
    """One server the caller signed in to: the scopes granted, when the access token expires (Iris
    refreshes it), the authorization server, and when the user signed in. Never a token."""

    server: str
    scopes: list[str]
    connected_at: dt.datetime
    expires_at: dt.datetime | None = None
    issuer: str | None = None


class McpConnectionList(WireStruct):
    """``GET /api/mcp/connections``: the caller's sign-ins at OAuth-protected MCP servers."""

    connections: list[McpConnectionOut]


class PromptArgumentOut(WireStruct, omit_defaults=True):
    """One argument of a prompt (a string)."""

    name: str
    required: bool
    description: str | None = None


class PromptOut(WireStruct, omit_defaults=True):
    """A prompt of one of the agent's MCP servers; a run starts from it with
    ``forwardedProps.prompt = {name, arguments}`` (the chat body's ``prompt``)."""

    name: str
    server: str
    arguments: list[PromptArgumentOut]
    title: str | None = None
    description: str | None = None


class PromptList(WireStruct, omit_defaults=True):
    """``GET /api/agents/{slug}/prompts``: the prompts, and the servers whose prompts could not be
    listed now (by name, with the reason)."""

    prompts: list[PromptOut]
    failed: dict[str, str] | None = None


class McpServerList(WireStruct):
    """``GET /api/mcp-servers``."""

    servers: list[McpServerOut]


class ToolFailureOut(WireStruct):
    """A tool plugin that failed to load, and why."""

    name: str
    source: str
    error: str


class ToolList(WireStruct):
    """``GET /api/tools``: every tool an admin can assign (plugins, and each enabled MCP server's), and
    the plugins that failed to load."""

    tools: list[ToolOut]
    failed: list[ToolFailureOut]


class ResourceLinkOut(WireStruct, omit_defaults=True):
    """A resource link a tool returned, once read (``POST …/resource-links/{index}/read``): what the
    tool said of it, the MCP server it was read from, and what was read, as its text or as stored bytes
    (``uploadId``, ``size``, ``sha256``, and a signed ``url`` until ``expiresAt``)."""

    type: Literal["resource_link"]
    uri: str
    name: str
    server: str
    read_at: str
    mime_type: str | None = None
    description: str | None = None
    size: int | None = None
    text: str | None = None
    upload_id: str | None = None
    sha256: str | None = None
    url: str | None = None
    expires_at: dt.datetime | None = None


_SECRET_HEADERS = ("authorization", "proxy-authorization", "cookie", "x-api-key")
_SECRET_WORDS = ("token", "secret", "password", "key", "auth")


def check_secrets(headers: dict[str, str], env: dict[str, str]) -> None:
    """Credentials never go in the database: a header or variable that looks like one must take its
    value from the environment (``${VAR}``); 422 ``secret_in_config`` naming it otherwise."""
    for kind, values in (("headers", headers), ("env", env)):
        for name, value in values.items():
            lowered = name.lower()
            secret = lowered in _SECRET_HEADERS or any(word in lowered for word in _SECRET_WORDS)
            if secret and "${" not in value:
                raise Unprocessable(
                    f"{kind}.{name} looks like a credential: write it as ${{VARIABLE}} and set the variable "
                    "in Iris's environment, so it is never stored.",
                    code="secret_in_config",
                    field=f"{kind}.{name}",
                )
