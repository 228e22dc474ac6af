"""What a run resolves before its stream opens: the caller's thread, its agent (at its newest version)
and model, the tools it offers and its system prompt.

Each is checked on the way — the thread's owner, the thread's agent, guest access, an enabled model the
agent offers whose provider is registered and whose key is set, client tool names that no server tool
has — and a refusal is a problem+json answer before anything is stored (:mod:`iris.app.runs.intake.prepare`).
The run then uses its agent version's instructions, tools, turn budget and models, never the live agent
row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import msgspec

from iris.app.agui.input import RunAgentInput
from iris.app.catalogue.cache import AgentLookup, ModelLookup
from iris.app.catalogue.defaults import DEFAULT_AGENT_SLUG
from iris.app.catalogue.views import effective_capabilities, missing_key
from iris.app.errors import Conflict, Forbidden, NotFound, ServiceUnavailable, Unprocessable
from iris.app.persistence.models import ChatSession, ModelRow
from iris.app.persistence.repositories import McpServerRepository
from iris.app.runs.intake.toolbox import RunTool, Toolbox
from iris.app.schemas.agents import AgentRef, AgentSnapshot
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.providers import Capabilities, NoSuchProvider, Provider, ToolSpec
from iris.providers.registry import ProviderRegistry


@dataclass(frozen=True, slots=True)
class RunnableModel:
    """A catalogue row ready to run: its provider and its effective capabilities."""

    row: ModelRow
    provider: Provider
    capabilities: Capabilities


def resolve_thread(session: ChatSession | None) -> ChatSession | None:
    """The caller's thread as the intake found it (threads are scoped to their owner, so another
    user's id is simply another thread), or ``None`` for a new one; 404 when the caller deleted it."""
    if session is not None and session.deleted_at is not None:
        raise NotFound("No such thread.", code="thread_not_found")
    return session


@dataclass(frozen=True, slots=True)
class RunAgent:
    """The agent a run uses: its newest version when the run was checked (``config``), which the run
    records, so its history says what answered after the agent changes."""

    pk: UUID
    version_pk: UUID
    config: AgentSnapshot
    ref: AgentRef
    budgets: tuple[float, float] = (0.0, 0.0)
    """The agent's USD budgets per day and month (0: none), as it is now (not versioned)."""

    @property
    def reasoning_defaults(self) -> dict[str, Any]:
        """The agent's reasoning defaults, under the option names the model's own defaults use."""
        defaults: dict[str, Any] = msgspec.to_builtins(self.config.reasoning)
        return defaults


async def resolve_agent(
    agents: AgentLookup, session: ChatSession | None, forwarded: dict[str, Any], principal: Principal
) -> RunAgent:
    """The thread's agent; for a new thread ``forwardedProps.agent`` (a slug) or the default one. An
    existing thread keeps its agent: naming another is 409 ``thread_agent_mismatch``."""
    wanted = forwarded.get("agent")
    if session is not None:
        found = await agents.current_by_id(session.agent_id)
        if found is not None and wanted is not None and wanted != found[0].slug:
            raise Conflict(
                f"This thread belongs to the agent {found[0].slug!r}; a thread keeps its agent "
                "(start a new thread for another one).",
                code="thread_agent_mismatch",
                field="forwardedProps.agent",
                extra={"agent": found[0].slug},
            )
    else:
        slug = DEFAULT_AGENT_SLUG if wanted is None else wanted
        found = await agents.current_by_slug(slug) if isinstance(slug, str) else None
    if found is None or not found[0].enabled:
        raise NotFound("No such agent.", code="agent_not_found", field="forwardedProps.agent")
    agent, version = found
    if principal.is_guest and not agent.guest_access:
        raise Forbidden("Guests may not use this agent; sign in.", code="agent_not_for_guests")
    principal.check_agent(agent.slug)
    return RunAgent(
        pk=agent.id,
        version_pk=version.id,
        config=msgspec.convert(version.snapshot, AgentSnapshot),
        ref=AgentRef(slug=agent.slug, version=version.version),
        budgets=(agent.budget_day_usd or 0.0, agent.budget_month_usd or 0.0),
    )


async def resolve_model(
    models: ModelLookup,
    registry: ProviderRegistry,
    agent: RunAgent,
    session: ChatSession | None,
    forwarded: dict[str, Any],
    settings: Settings,
) -> RunnableModel:
    """``forwardedProps.modelId``, which the agent must offer (422 ``model_not_in_agent``); else the
    thread's model while the agent still offers it; else the agent's default."""
    config = agent.config
    requested = forwarded.get("modelId")
    if requested is not None:
        row = await models.get_by_ref(requested) if isinstance(requested, str) else None
        if row is None or not row.enabled:
            raise Unprocessable(
                f"No enabled model {requested!r}.", code="model_not_found", field="forwardedProps.modelId"
            )
        if not config.offers(str(row.id)):
            raise Unprocessable(
                f"The agent {config.slug!r} does not offer {row.ref}; it offers "
                f"{', '.join(pin.ref for pin in config.models)}.",
                code="model_not_in_agent",
                field="forwardedProps.modelId",
            )
    else:
        row = None
        default = UUID(config.default_model.id) if config.default_model is not None else None
        for candidate in (session.model_id if session else None, default):
            if candidate is not None and config.offers(str(candidate)):
                row = await models.get_by_id(candidate)
                if row is not None and row.enabled:
                    break
                row = None
        if row is None:
            raise Unprocessable(
                "No model to run: name one in forwardedProps.modelId.",
                code="model_not_found",
                field="forwardedProps.modelId",
            )
    await registry.ready([row.provider])  # a provider no enabled model used at start-up loads now
    return runnable(row, registry, settings)


def runnable(row: ModelRow, registry: ProviderRegistry, settings: Settings) -> RunnableModel:
    """A catalogue row with its provider and effective capabilities; 503 when the provider is missing or
    the variable its key is read from is not set (checked before anything is stored or streamed)."""
    try:
        provider = registry.get(row.provider)
    except NoSuchProvider as exc:
        raise ServiceUnavailable(
            f"The provider {row.provider!r} of {row.ref} is not available.", code="provider_unavailable"
        ) from exc
    if variable := missing_key(row, provider, registry):
        raise ServiceUnavailable(
            f"{row.ref} cannot run: {variable} is not set on the server.",
            code="provider_key_missing",
            extra={"variable": variable},
        )
    caps = effective_capabilities(row, provider, max_images_per_message=settings.max_images_per_message)
    return RunnableModel(row=row, provider=provider, capabilities=caps)


async def offered_server_tools(
    agent: AgentSnapshot,
    caps: Capabilities,
    toolbox: Toolbox,
    servers: McpServerRepository,
    owner: str | None = None,
) -> tuple[RunTool, ...]:
    """The agent's tools Iris runs itself (plugins and MCP servers), when the model can call tools (an
    entry no tool source provides any more is skipped, so a removed plugin does not break the agent);
    ``owner``'s connections to servers each user signs in to."""
    if not caps.tools:
        return ()
    return await toolbox.for_agent(agent.tools, servers, owner)


def offered_frontend_tools(
    body: RunAgentInput, server_tools: Sequence[RunTool], caps: Capabilities
) -> tuple[ToolSpec, ...]:
    """The client's own tools (never run here); a name that a server tool already has is refused."""
    taken = {tool.name for tool in server_tools}
    for index, tool in enumerate(body.tools):
        if tool.name in taken:
            raise Unprocessable(
                f"The tool name {tool.name!r} belongs to a server tool; rename the client tool.",
                code="tool_name_conflict",
                field=f"tools[{index}].name",
            )
    if not caps.tools:
        return ()
    return tuple(
        ToolSpec(
            name=tool.name,
            description=tool.description,
            parameters=tool.parameters
            if tool.parameters is not None
            else {"type": "object", "properties": {}},
        )
        for tool in body.tools
    )


def system_prompt(agent: AgentSnapshot, body: RunAgentInput) -> str | None:
    """The agent's instructions, plus every context entry the client sent (AG-UI: make them visible)."""
    sections = [agent.instructions.strip()] if agent.instructions.strip() else []
    sections += [f"{entry.description}:\n{entry.value}" for entry in body.context]
    return "\n\n".join(sections) or None
