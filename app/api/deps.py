"""Dependency providers: app-scoped objects from ``app.state``, the caller, and repositories.

Every route that needs a caller asks for ``principal`` (any valid token) or ``admin``; there is
no other way to authenticate, so the checks live here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.catalogue.agent_tools import KnownTools, ToolDirectory
from iris.app.persistence.repositories import (
    AgentRepository,
    ApiKeyRepository,
    AuditRepository,
    CooldownRepository,
    McpServerRepository,
    MessageRepository,
    ModelRepository,
    RunRepository,
    SearchRepository,
    SessionRepository,
    UploadRepository,
    UsageRepository,
)
from iris.app.persistence.search_indexer import SearchIndexer
from iris.app.runs import RunManager, Toolbox
from iris.app.security.api_keys import KeyResolver, presented_key
from iris.app.security.audit import PRINCIPAL_STATE
from iris.app.security.auth import Principal, bearer_token, require_admin
from iris.app.security.identity import TokenVerifier
from iris.app.security.url_policy import UrlPolicy
from iris.app.settings import Settings
from iris.app.storage.base import Storage
from iris.providers.registry import ProviderRegistry


def provide_settings(state: State) -> Settings:
    settings: Settings = state.settings
    return settings


def provide_storage(state: State) -> Storage:
    storage: Storage = state.storage
    return storage


def provide_registry(state: State) -> ProviderRegistry:
    """The registry. Start-up loaded the providers of the catalogue's enabled models; a handler that
    needs another one awaits ``registry.ready([...])`` for it before asking for it (the import runs on
    a thread: waiting never blocks the loop)."""
    registry: ProviderRegistry = state.registry
    return registry


async def provide_tool_directory(
    state: State, mcp_repo: NamedDependency[McpServerRepository]
) -> ToolDirectory:
    """The plugin tools the app knows, the MCP servers the catalogue holds now, and the tools of those
    this process has listed (nothing is connected to build it)."""
    directory: KnownTools = state.tool_directory
    toolbox: Toolbox = state.toolbox
    names = [row.name for row in await mcp_repo.list_all(include_disabled=True)]
    listed = {name: toolbox.listed_tools(name) for name in names}
    return directory.with_servers(names, {name: tools for name, tools in listed.items() if tools})


def provide_toolbox(state: State) -> Toolbox:
    toolbox: Toolbox = state.toolbox
    return toolbox


def provide_decode_limiter(state: State) -> anyio.CapacityLimiter:
    limiter: anyio.CapacityLimiter = state.decode_limiter
    return limiter


def provide_url_policy(state: State) -> UrlPolicy:
    policy: UrlPolicy = state.url_policy
    return policy


def provide_search_indexer(state: State) -> SearchIndexer:
    indexer: SearchIndexer = state.search_indexer
    return indexer


def provide_run_manager(state: State) -> RunManager:
    manager: RunManager = state.run_manager
    return manager


async def provide_principal(request: Request[Any, Any, Any]) -> Principal:
    """The caller: an API key (``x-api-key``, or ``Authorization: Bearer iris_sk_…``) on any surface, else
    a bearer token (Iris's own, or the identity provider's)."""
    key = presented_key(request)
    if key is not None:
        resolver: KeyResolver = request.app.state.key_resolver
        address = request.client.host if request.client else None
        principal = await resolver.principal(key, path=request.url.path, address=address)
    else:
        verifier: TokenVerifier = request.app.state.token_verifier
        principal = await verifier.verify(bearer_token(request))
    request.scope.setdefault("state", {})[PRINCIPAL_STATE] = principal  # for the audit log's hook
    return principal


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a request that starts a run needs — the caller, and the app's settings, providers, URL
    policy and run manager — as one dependency. Litestar resolves the dependencies of one level at
    once, each in a task of its own: asked for one by one, these cost every run a task group of four
    (ADR 0004)."""

    principal: Principal
    settings: Settings
    registry: ProviderRegistry
    url_policy: UrlPolicy
    run_manager: RunManager
    decode_limiter: anyio.CapacityLimiter
    """Bounds the image decodes of inline media (data URLs)."""
    request_id: str | None = None
    """The caller's ``x-request-id``, for the audit rows a run writes."""


async def provide_run_context(request: Request[Any, Any, Any]) -> RunContext:
    state = request.app.state
    return RunContext(
        principal=await provide_principal(request),
        settings=state.settings,
        registry=state.registry,
        url_policy=state.url_policy,
        run_manager=state.run_manager,
        decode_limiter=state.decode_limiter,
        request_id=request.headers.get("x-request-id", "")[:128] or None,
    )


def provide_admin(principal: NamedDependency[Principal]) -> Principal:
    return require_admin(principal)


def provide_models(db_session: NamedDependency[AsyncSession]) -> ModelRepository:
    return ModelRepository(session=db_session)


def provide_api_keys(db_session: NamedDependency[AsyncSession]) -> ApiKeyRepository:
    return ApiKeyRepository(session=db_session)


def provide_audit(db_session: NamedDependency[AsyncSession]) -> AuditRepository:
    return AuditRepository(session=db_session)


def provide_usage(db_session: NamedDependency[AsyncSession]) -> UsageRepository:
    return UsageRepository(session=db_session)


def provide_cooldowns(db_session: NamedDependency[AsyncSession]) -> CooldownRepository:
    return CooldownRepository(session=db_session)


def provide_agents(db_session: NamedDependency[AsyncSession]) -> AgentRepository:
    return AgentRepository(session=db_session)


def provide_mcp_servers(db_session: NamedDependency[AsyncSession]) -> McpServerRepository:
    return McpServerRepository(session=db_session)


def provide_sessions(db_session: NamedDependency[AsyncSession]) -> SessionRepository:
    return SessionRepository(session=db_session)


def provide_messages(db_session: NamedDependency[AsyncSession]) -> MessageRepository:
    return MessageRepository(session=db_session)


def provide_runs(db_session: NamedDependency[AsyncSession]) -> RunRepository:
    return RunRepository(session=db_session)


def provide_uploads(db_session: NamedDependency[AsyncSession]) -> UploadRepository:
    return UploadRepository(session=db_session)


def provide_search(db_session: NamedDependency[AsyncSession]) -> SearchRepository:
    return SearchRepository(session=db_session)


DEPENDENCIES: dict[str, Provide] = {
    "settings": Provide(provide_settings, sync_to_thread=False),
    "storage": Provide(provide_storage, sync_to_thread=False),
    "decode_limiter": Provide(provide_decode_limiter, sync_to_thread=False),
    "registry": Provide(provide_registry, sync_to_thread=False),
    "tool_directory": Provide(provide_tool_directory),
    "toolbox": Provide(provide_toolbox, sync_to_thread=False),
    "url_policy": Provide(provide_url_policy, sync_to_thread=False),
    "run_manager": Provide(provide_run_manager, sync_to_thread=False),
    "search_indexer": Provide(provide_search_indexer, sync_to_thread=False),
    "principal": Provide(provide_principal),
    "run_context": Provide(provide_run_context),
    "admin": Provide(provide_admin, sync_to_thread=False),
    "model_repo": Provide(provide_models, sync_to_thread=False),
    "api_key_repo": Provide(provide_api_keys, sync_to_thread=False),
    "audit_repo": Provide(provide_audit, sync_to_thread=False),
    "usage_repo": Provide(provide_usage, sync_to_thread=False),
    "cooldown_repo": Provide(provide_cooldowns, sync_to_thread=False),
    "agent_repo": Provide(provide_agents, sync_to_thread=False),
    "mcp_repo": Provide(provide_mcp_servers, sync_to_thread=False),
    "session_repo": Provide(provide_sessions, sync_to_thread=False),
    "message_repo": Provide(provide_messages, sync_to_thread=False),
    "run_repo": Provide(provide_runs, sync_to_thread=False),
    "upload_repo": Provide(provide_uploads, sync_to_thread=False),
    "search_repo": Provide(provide_search, sync_to_thread=False),
}
