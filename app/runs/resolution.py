"""What a run resolves before its stream opens: the caller's thread, its agent and model, the tools it
offers and its system prompt.

Each is checked on the way — the thread's owner, guest access, an enabled model whose provider is
registered and whose key is set, client tool names that no server tool has — and a refusal is a
problem+json answer before anything is stored (:mod:`app.runs.intake`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.agui.input import RunAgentInput
from app.catalogue.defaults import DEFAULT_AGENT_SLUG
from app.catalogue.views import effective_capabilities, missing_key
from app.errors import Forbidden, NotFound, ServiceUnavailable, Unprocessable
from app.persistence.models import Agent, ChatSession, ModelRow
from app.persistence.repositories import AgentRepository, ModelRepository, SessionRepository
from app.runs.tools import SERVER_TOOLS, ServerTool
from app.security.auth import Principal
from app.settings import Settings
from providers import Capabilities, NoSuchProvider, Provider, ToolSpec
from providers.registry import ProviderRegistry


@dataclass(frozen=True, slots=True)
class RunnableModel:
    """A catalogue row ready to run: its provider and its effective capabilities."""

    row: ModelRow
    provider: Provider
    capabilities: Capabilities


async def resolve_thread(
    sessions: SessionRepository, thread_id: str, principal: Principal
) -> ChatSession | None:
    """The caller's thread, or ``None`` for a new one; 404 when the caller deleted it (threads are
    scoped to their owner, so another user's id is simply another thread)."""
    session = await sessions.get_for_owner(thread_id, principal.user_id)
    if session is not None and session.deleted_at is not None:
        raise NotFound("No such thread.", code="thread_not_found")
    return session


async def resolve_agent(
    agents: AgentRepository, session: ChatSession | None, forwarded: dict[str, Any], principal: Principal
) -> Agent:
    """The thread's agent; for a new thread ``forwardedProps.agent`` (a slug) or the default one."""
    if session is not None:
        agent = await agents.get_by_id(session.agent_id)
        wanted = forwarded.get("agent")
        if agent is not None and wanted is not None and wanted != agent.slug:
            raise NotFound("No such thread.", code="thread_not_found")  # it belongs to another agent
    else:
        slug = forwarded.get("agent", DEFAULT_AGENT_SLUG)
        agent = await agents.get_by_slug(slug) if isinstance(slug, str) else None
    if agent is None:
        raise NotFound("No such agent.", code="agent_not_found", field="forwardedProps.agent")
    if principal.is_guest and not agent.guest_access:
        raise Forbidden("Guests may not use this agent; sign in.", code="agent_not_for_guests")
    return agent


async def resolve_model(
    models: ModelRepository,
    registry: ProviderRegistry,
    agent: Agent,
    session: ChatSession | None,
    forwarded: dict[str, Any],
    principal: Principal,
    settings: Settings,
) -> RunnableModel:
    """``forwardedProps.modelId``, else the thread's model, else the agent's default."""
    await registry.ready()
    requested = forwarded.get("modelId")
    if requested is not None:
        row = await models.get_by_ref(requested) if isinstance(requested, str) else None
        if row is None or not row.enabled:
            raise Unprocessable(
                f"No enabled model {requested!r}.", code="model_not_found", field="forwardedProps.modelId"
            )
        if principal.is_guest and not row.guest_visible and row.id != agent.default_model_id:
            raise Forbidden("Guests may not use this model.", code="model_not_for_guests")
    else:
        row = None
        for candidate in (session.model_id if session else None, agent.default_model_id):
            if candidate is not None:
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


def offered_server_tools(agent: Agent, caps: Capabilities) -> tuple[ServerTool, ...]:
    """The agent's tools Iris runs itself, when the model can call tools at all."""
    if not caps.tools:
        return ()
    return tuple(SERVER_TOOLS[name] for name in agent.enabled_tools if name in SERVER_TOOLS)


def offered_frontend_tools(
    body: RunAgentInput, server_tools: Sequence[ServerTool], caps: Capabilities
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


def system_prompt(agent: Agent, body: RunAgentInput) -> str | None:
    """The agent's prompt, plus every context entry the client sent (AG-UI: make them visible)."""
    sections = [agent.system_prompt.strip()] if agent.system_prompt.strip() else []
    sections += [f"{entry.description}:\n{entry.value}" for entry in body.context]
    return "\n\n".join(sections) or None
