"""Everything a run checks and records before its stream opens (SPEC §6).

Any failure here is a problem+json answer and no stream: protocol version, thread ownership, run id,
message shapes, attachment URLs, model resolution and the capability check all come before the
first event. On success the new user messages and the ``running`` run row are added to the
request's transaction, and the caller commits before the run starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from advanced_alchemy.exceptions import DuplicateKeyError, IntegrityError

from app.agui.input import InboundUser, RunAgentInput, check_protocol_version, parse_messages
from app.auth import Principal
from app.catalogue import DEFAULT_AGENT_SLUG, effective_capabilities, model_spec
from app.errors import Conflict, Forbidden, NotFound, ServiceUnavailable, Unprocessable
from app.media.pipeline import check_images
from app.persistence.models import Agent, ChatSession, Message, ModelRow, Run
from app.persistence.repositories import (
    AgentRepository,
    MessageRepository,
    ModelRepository,
    RunRepository,
    SessionRepository,
    UploadRepository,
    utcnow,
)
from app.runs.parts import canonical_user_parts, image_parts
from app.runs.tools import SERVER_TOOLS, ServerTool
from app.settings import Settings
from app.url_policy import UrlPolicy
from providers import Capabilities, ModelSpec, NoSuchProvider, Provider
from providers.registry import ProviderRegistry

MAX_ID_LENGTH = 128


@dataclass(frozen=True, slots=True)
class Repositories:
    """The repositories intake works with, all on the request's session."""

    agents: AgentRepository
    models: ModelRepository
    sessions: SessionRepository
    messages: MessageRepository
    runs: RunRepository
    uploads: UploadRepository


@dataclass(frozen=True, slots=True)
class RunPlan:
    """A checked run, ready to execute: everything the orchestrator needs, no ORM objects."""

    run_pk: UUID
    run_id: str
    session_pk: UUID
    thread_id: UUID
    owner_id: str
    provider: Provider
    model: ModelSpec
    model_ref: str
    capabilities: Capabilities
    history: Sequence[Message]
    """The thread as stored once this run's user messages were added: the model's context."""
    system: str | None
    server_tools: tuple[ServerTool, ...]


@dataclass(frozen=True, slots=True)
class _Model:
    row: ModelRow
    provider: Provider
    capabilities: Capabilities


async def prepare_run(
    body: RunAgentInput,
    *,
    principal: Principal,
    repos: Repositories,
    registry: ProviderRegistry,
    settings: Settings,
    policy: UrlPolicy,
) -> RunPlan:
    """Check the run and record its new user messages and its run row (uncommitted)."""
    check_protocol_version(body.protocol_version)
    thread_id = _thread_id(body.thread_id)
    run_id = _client_id(body.run_id, "runId")
    inbound = parse_messages(body.messages)
    for message in inbound:
        _client_id(message.id, f"{getattr(message, 'field', 'messages')}.id")
    forwarded = body.forwarded_props if isinstance(body.forwarded_props, dict) else {}

    session = await _thread(repos, thread_id, principal)
    agent = await _agent(repos.agents, session, forwarded, principal)
    if session is not None and await repos.runs.active_for_session(session.id) is not None:
        raise Conflict("A run is already in progress on this thread.", code="run_in_progress")

    model = await _model(repos.models, registry, agent, session, forwarded, principal)
    stored = (
        await repos.messages.stored_external_ids(session.id, (m.id for m in inbound))
        if session is not None
        else set()
    )
    new_users = [m for m in inbound if isinstance(m, InboundUser) and m.id not in stored]
    new_parts = [
        await canonical_user_parts(
            m.parts,
            user_id=principal.user_id,
            thread_id=thread_id,
            policy=policy,
            uploads=repos.uploads,
            max_images=settings.max_images_per_message,
            field=m.field,
        )
        for m in new_users
    ]
    check_images(
        model.capabilities,
        [p["mimeType"] for parts in new_parts for p in image_parts(parts)],
        model_ref=model.row.ref,
    )
    if not new_users and not await _awaits_answer(repos.messages, session):
        raise Unprocessable(
            "There is nothing new to answer: send a new user message.",
            code="no_new_message",
            field="messages",
        )

    if session is None:
        session = await repos.sessions.create_for_owner(thread_id, principal.user_id, agent.id, model.row.id)
    else:
        session.model_id = model.row.id
        await repos.sessions.touch(session)
    try:
        run = await repos.runs.add(
            Run(
                external_id=run_id,
                session_id=session.id,
                owner_id=principal.user_id,
                status="running",
                model_id=model.row.id,
                model_ref=model.row.ref,
                started_at=utcnow(),
                heartbeat_at=utcnow(),
            )
        )
    except (DuplicateKeyError, IntegrityError) as exc:  # the unique external_id: used before
        raise Conflict(
            "This runId was already used; every run needs a new one.", code="run_exists", field="runId"
        ) from exc
    await repos.messages.append_many(
        session.id,
        [
            Message(
                role="user", content=_text_of(parts), parts=parts, meta={}, run_id=run.id, external_id=m.id
            )
            for m, parts in zip(new_users, new_parts, strict=True)
        ],
    )
    return RunPlan(
        run_pk=run.id,
        run_id=run_id,
        session_pk=session.id,
        thread_id=thread_id,
        owner_id=principal.user_id,
        provider=model.provider,
        model=model_spec(model.row),
        model_ref=model.row.ref,
        capabilities=model.capabilities,
        history=await repos.messages.active_history(session.id),
        system=_system_prompt(agent, body),
        server_tools=tuple(SERVER_TOOLS[name] for name in agent.enabled_tools if name in SERVER_TOOLS)
        if model.capabilities.tools
        else (),
    )


async def _thread(repos: Repositories, thread_id: UUID, principal: Principal) -> ChatSession | None:
    """The caller's thread, or ``None`` for a new one; 404 when the id belongs to someone else."""
    session = await repos.sessions.get_any(thread_id)
    if session is not None:
        if session.owner_id != principal.user_id or session.deleted_at is not None:
            raise NotFound("No such thread.", code="thread_not_found")
        return session
    if await repos.uploads.thread_used_by_other_owner(thread_id, principal.user_id):
        raise NotFound("No such thread.", code="thread_not_found")
    return None


def _thread_id(value: str) -> UUID:
    try:
        return UUID(value)
    except ValueError as exc:
        raise Unprocessable("'threadId' must be a UUID.", code="invalid_thread_id", field="threadId") from exc


def _client_id(value: str, field: str) -> str:
    if not value or len(value) > MAX_ID_LENGTH or not value.isprintable():
        raise Unprocessable(
            f"'{field}' must be 1 to {MAX_ID_LENGTH} printable characters.", code="invalid_id", field=field
        )
    return value


async def _agent(
    agents: AgentRepository, session: ChatSession | None, forwarded: dict[str, Any], principal: Principal
) -> Agent:
    """The thread's agent; for a new thread ``forwardedProps.agent`` (a slug) or the default one."""
    if session is not None:
        agent = await agents.get_one_or_none(id=session.agent_id)
    else:
        slug = forwarded.get("agent", DEFAULT_AGENT_SLUG)
        agent = await agents.get_by_slug(slug) if isinstance(slug, str) else None
    if agent is None:
        raise NotFound("No such agent.", code="agent_not_found", field="forwardedProps.agent")
    if principal.is_guest and not agent.guest_access:
        raise Forbidden("Guests may not use this agent; sign in.", code="agent_not_for_guests")
    return agent


async def _model(
    models: ModelRepository,
    registry: ProviderRegistry,
    agent: Agent,
    session: ChatSession | None,
    forwarded: dict[str, Any],
    principal: Principal,
) -> _Model:
    """``forwardedProps.modelId``, else the thread's model, else the agent's default."""
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
                row = await models.get_one_or_none(id=candidate)
                if row is not None and row.enabled:
                    break
                row = None
        if row is None:
            raise Unprocessable(
                "No model to run: name one in forwardedProps.modelId.",
                code="model_not_found",
                field="forwardedProps.modelId",
            )
    try:
        provider = registry.get(row.provider)
    except NoSuchProvider as exc:
        raise ServiceUnavailable(
            f"The provider {row.provider!r} of {row.ref} is not available.", code="provider_unavailable"
        ) from exc
    return _Model(row=row, provider=provider, capabilities=effective_capabilities(row, provider))


async def _awaits_answer(messages: MessageRepository, session: ChatSession | None) -> bool:
    """Whether the thread's last live message is one the model has not answered yet."""
    if session is None:
        return False
    history = await messages.active_history(session.id)
    return bool(history) and history[-1].role in ("user", "tool")


def _text_of(parts: Sequence[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if p.get("type") == "text")


def _system_prompt(agent: Agent, body: RunAgentInput) -> str | None:
    """The agent's prompt, plus every context entry the client sent (AG-UI: make them visible)."""
    sections = [agent.system_prompt.strip()] if agent.system_prompt.strip() else []
    sections += [f"{entry.description}:\n{entry.value}" for entry in body.context]
    return "\n\n".join(sections) or None
