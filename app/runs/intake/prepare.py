"""Everything a run checks and records before its stream opens (SPEC §6).

Any failure here is a problem+json answer and no stream: protocol version, thread ownership, run id,
message shapes, attachment URLs, model resolution and the capability check all come before the
first event. What the run uses is resolved in :mod:`iris.app.runs.intake.resolution` (thread, agent, model,
tools) and what it adds in :mod:`iris.app.runs.intake.new_input` (new messages, resumed interrupts); here they
are checked together and, on success, the new user messages, the ``running`` run row and the thread's
are handed to the intake's commit (:class:`~iris.app.persistence.repositories.IntakeRows`), which the run
starts while it calls the model (:mod:`iris.app.runs.engine.streaming`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from uuid_utils.compat import uuid7

from iris.app.agui.input import InboundMessage, RunAgentInput, check_protocol_version, parse_messages
from iris.app.catalogue.cache import CatalogueView
from iris.app.catalogue.views import model_spec
from iris.app.errors import Conflict, NotFound, Unprocessable
from iris.app.media.inline_uploads import InlineUploads
from iris.app.media.pipeline import check_images
from iris.app.persistence.models import ChatSession, Message, Run
from iris.app.persistence.repositories import (
    IntakeRead,
    IntakeRows,
    MessageRepository,
    SpendHold,
    chain,
    place,
)
from iris.app.runs.content.attachments import check_new_attachments, mark_delivery, notices
from iris.app.runs.content.context import check_request_fits, sent_images
from iris.app.runs.content.parts import deleted_uploads, image_parts
from iris.app.runs.content.reasoning import ReasoningControl, reasoning_control
from iris.app.runs.conversations.branches import BranchPoint, branch_point, leaf_of, line_from
from iris.app.runs.intake.fallbacks import ModelChoice, Request, fallback_choices, retry_policy
from iris.app.runs.intake.holds import admit_stored_run, run_hold
from iris.app.runs.intake.interrupts import ResumeDecision
from iris.app.runs.intake.knobs import NO_OPTIONS
from iris.app.runs.intake.new_input import estimate_images, new_messages, resume_decisions
from iris.app.runs.intake.plan import Repositories, Rewind, RunPlan
from iris.app.runs.intake.prompts import prompt_message
from iris.app.runs.intake.resolution import (
    RunAgent,
    RunnableModel,
    offered_frontend_tools,
    offered_server_tools,
    resolve_agent,
    resolve_model,
    resolve_thread,
    system_prompt,
)
from iris.app.runs.intake.toolbox import RunTool, Toolbox
from iris.app.security.auth import Principal
from iris.app.security.url_policy import UrlPolicy
from iris.app.settings import Settings
from iris.app.storage.base import Storage
from iris.app.threads import check_thread_id, is_client_id
from iris.providers import ModelSpec, ToolSpec
from iris.providers.registry import ProviderRegistry

MAX_ID_LENGTH = 128


async def prepare_run(
    body: RunAgentInput,
    *,
    principal: Principal,
    repos: Repositories,
    registry: ProviderRegistry,
    settings: Settings,
    policy: UrlPolicy,
    toolbox: Toolbox,
    storage: Storage,
    rewind: Rewind | None = None,
    inline: InlineUploads | None = None,
    request_id: str | None = None,
) -> RunPlan:
    """Check the run (every query comes first), then add its new messages and its run row to the
    intake's session without writing them: the intake's commit does, while the model is asked.
    ``inline`` takes the documents and audio sent as bytes: checked with the messages, counted and
    stored only once the run is accepted (their rows join the intake's transaction)."""
    ids = _checked_ids(body, inline_images=inline is not None and inline.images)
    thread = await _thread_line(body, ids, principal, repos, rewind)
    offer = await _offer(body, ids, thread, repos, registry, settings, toolbox, principal.user_id)
    principal.check_model(offer.model.row.ref)
    prompted = await prompt_message(
        ids.forwarded, thread.agent.config.tools, toolbox, repos.mcp_servers, principal.user_id
    )
    new_rows = await new_messages(
        [m for m in ids.inbound if m.id not in thread.known] + ([prompted] if prompted else []),
        thread.history,
        principal=principal,
        thread_id=ids.thread_id,
        uploads=repos.uploads,
        settings=settings,
        policy=policy,
        inline=inline,
    )
    decisions, ignored = _checked_new_input(body, offer, thread, new_rows)
    request, leaf = await _request(body, offer, thread, new_rows, repos, settings)
    fallbacks = await _fallbacks(offer, ids, thread, request, registry, settings)
    hold = run_hold(uuid7(), request, offer.model, thread.agent, settings)
    await admit_stored_run(thread.found.run_id_taken, principal, repos, settings, inline, hold)
    rows, spec = await _intake_rows(
        ids, offer, thread, request, leaf, new_rows, principal, repos, storage, hold
    )
    history = request.history
    answered = [row for row in new_rows if row.role == "user"] or (
        [row for row in history if row.role == "user"][-1:] if rewind is not None else []
    )
    model, agent = offer.model, thread.agent
    return RunPlan(
        intake_rows=rows,
        run_pk=rows.run.id,
        run_id=ids.run_id,
        session_pk=rows.session.id,
        thread_id=ids.thread_id,
        owner_id=principal.user_id,
        key_id=principal.key_id,
        request_id=request_id,
        provider=model.provider,
        model=spec,
        model_ref=model.row.ref,
        capabilities=model.capabilities,
        history=history,
        parent_pk=leaf,
        deleted_uploads=request.deleted,
        system=request.system,
        server_tools=offer.server_tools,
        frontend_tools=offer.frontend_tools,
        max_tool_iterations=agent.config.max_tool_iterations or settings.max_tool_iterations,
        resume=tuple(decisions),
        ignored_resume_ids=tuple(ignored),
        agent=agent.ref,
        user_message_id=(answered[-1].external_id or str(answered[-1].id)) if answered else None,
        reasoning=offer.reasoning,
        retry=retry_policy(model.row, settings),
        fallbacks=fallbacks,
        attachment_notices=tuple(notices(history, model.capabilities, model_ref=model.row.ref)),
    )


@dataclass(frozen=True, slots=True)
class _Ids:
    """The request's ids and messages, checked before any query."""

    thread_id: str
    run_id: str
    inbound: list[InboundMessage]
    forwarded: dict[str, Any]


@dataclass(slots=True)
class _Thread:
    """The thread as intake found it: its session (none for a new thread), its agent, and the line the
    run continues (after an edit, a regeneration or a client's branch) with the messages it knows."""

    found: IntakeRead
    catalogue: CatalogueView
    session: ChatSession | None
    agent: RunAgent
    history: list[Message]
    known: dict[str, UUID]
    awaiting: Run | None
    """The latest run, when it ended with interrupts this run must answer."""


@dataclass(frozen=True, slots=True)
class _Offer:
    """The model the run asks, its reasoning, and the tools it is offered."""

    model: RunnableModel
    reasoning: ReasoningControl
    server_tools: tuple[RunTool, ...]
    frontend_tools: tuple[ToolSpec, ...]


def _checked_ids(body: RunAgentInput, *, inline_images: bool = False) -> _Ids:
    """The protocol version, the thread's and the run's ids and the messages' shapes and ids."""
    check_protocol_version(body.protocol_version)
    thread_id = check_thread_id(body.thread_id)
    run_id = _client_id(body.run_id, "runId")
    inbound = parse_messages(body.messages, inline_images=inline_images)
    for message in inbound:
        _client_id(message.id, f"{getattr(message, 'field', 'messages')}.id")
    forwarded = body.forwarded_props if isinstance(body.forwarded_props, dict) else {}
    return _Ids(thread_id, run_id, inbound, forwarded)


async def _thread_line(
    body: RunAgentInput, ids: _Ids, principal: Principal, repos: Repositories, rewind: Rewind | None
) -> _Thread:
    """The thread, its agent and the line the run continues; refused while another run is going, while
    an interrupt waits for its answer (unless the chat surface edits), and an edit of no session."""
    found = await repos.sessions.for_intake(ids.thread_id, principal.user_id, ids.run_id)
    catalogue = await repos.catalogue.at(repos.session, found.generation)
    session = resolve_thread(found.session)
    agent = await resolve_agent(catalogue, session, ids.forwarded, principal)
    latest = found.latest_run
    awaiting = latest if latest is not None and latest.pending_interrupts else None
    thread = _Thread(found, catalogue, session, agent, [], {}, awaiting)
    if session is None:
        if rewind is not None:
            raise Unprocessable("Editing or regenerating needs an existing session.", code="session_required")
        return thread
    if latest is not None and latest.status == "running":
        raise Conflict("A run is already in progress on this thread.", code="run_in_progress")
    history = list(await repos.messages.active_history(session.id))
    thread.known = await repos.messages.known_ids(session.id, (m.id for m in ids.inbound))
    point = (
        await _rewind_point(repos.messages, session.id, history, rewind)
        if rewind is not None
        else branch_point(ids.inbound, thread.known, history, resuming=bool(body.resume))
    )
    if point is not None:
        if awaiting is not None and rewind is None:
            raise Unprocessable(
                "This thread is waiting for an answer to its interrupt: answer it before branching.",
                code="interrupt_pending",
                field="messages",
            )
        history = await line_from(repos.messages, session.id, history, point)
    thread.history = history
    return thread


async def _offer(
    body: RunAgentInput,
    ids: _Ids,
    thread: _Thread,
    repos: Repositories,
    registry: ProviderRegistry,
    settings: Settings,
    toolbox: Toolbox,
    owner: str,
) -> _Offer:
    """The model (the agent's choice or the client's), its reasoning, and the tools offered to it."""
    agent = thread.agent
    model = await resolve_model(thread.catalogue, registry, agent, thread.session, ids.forwarded, settings)
    reasoning_defaults = {**model.row.options, **agent.reasoning_defaults}  # the agent's win over the model's
    reasoning = reasoning_control(ids.forwarded, reasoning_defaults, model.capabilities, model.row.ref)
    tools_on = ids.forwarded.get("enableTools") is not False
    server_tools = (
        await offered_server_tools(agent.config, model.capabilities, toolbox, repos.mcp_servers, owner)
        if tools_on
        else ()
    )
    frontend_tools = offered_frontend_tools(body, server_tools, model.capabilities) if tools_on else ()
    return _Offer(model, reasoning, server_tools, frontend_tools)


def _checked_new_input(
    body: RunAgentInput, offer: _Offer, thread: _Thread, new_rows: list[Message]
) -> tuple[list[ResumeDecision], list[str]]:
    """The new messages' images and attachments against the model, the answers to the open interrupts,
    and something new to answer."""
    model = offer.model
    check_images(
        model.capabilities,
        [p["mimeType"] for row in new_rows for p in image_parts(row.parts)],
        model_ref=model.row.ref,
    )
    check_new_attachments(new_rows, model.capabilities, model_ref=model.row.ref)
    decisions, ignored = resume_decisions(thread.awaiting, body)
    history = thread.history
    if not new_rows and not decisions and not (history and history[-1].role in ("user", "tool")):
        raise Unprocessable(
            "There is nothing new to answer: send a new user message.",
            code="no_new_message",
            field="messages",
        )
    return decisions, ignored


async def _request(
    body: RunAgentInput,
    offer: _Offer,
    thread: _Thread,
    new_rows: list[Message],
    repos: Repositories,
    settings: Settings,
) -> tuple[Request, UUID | None]:
    """The model's request: the line with the new messages chained after it (``thread.history`` grows by
    them), its system prompt and tools, checked against the model's request limits; and the line's new
    end."""
    history = thread.history
    deleted = await deleted_uploads(repos.uploads, history)  # the new rows' uploads were just found
    chain(new_rows, history[-1].id if history else None)
    leaf = leaf_of(history, new_rows)
    history += new_rows
    system = system_prompt(thread.agent.config, body)
    model = offer.model
    offered_tools = [*(tool.spec for tool in offer.server_tools), *offer.frontend_tools]
    check_request_fits(
        model.capabilities,
        history,
        system,
        offered_tools,
        deleted=deleted,
        storage_publicly_reachable=settings.storage_publicly_reachable,
        model_ref=model.row.ref,
    )
    request = Request(
        history=history,
        deleted=deleted,
        system=system,
        tools=offered_tools,
        new_images=[p["mimeType"] for row in new_rows for p in image_parts(row.parts)],
        new_messages=new_rows,
        first_capabilities=model.capabilities,
        options=NO_OPTIONS,
        wants_reasoning=offer.reasoning.request is not None,
        storage_publicly_reachable=settings.storage_publicly_reachable,
    )
    return request, leaf


async def _fallbacks(
    offer: _Offer,
    ids: _Ids,
    thread: _Thread,
    request: Request,
    registry: ProviderRegistry,
    settings: Settings,
) -> tuple[ModelChoice, ...]:
    """The model's fallbacks that the agent offers and that suit this request, in order."""
    agent, forwarded = thread.agent, ids.forwarded
    return await fallback_choices(
        offer.model.row,
        models=thread.catalogue,
        registry=registry,
        settings=settings,
        allowed=lambda row: agent.config.offers(str(row.id)),  # the agent's offer is the authority
        suits=request.suits(
            lambda fallback: reasoning_control(
                forwarded,
                {**fallback.row.options, **agent.reasoning_defaults},
                fallback.capabilities,
                fallback.row.ref,
            )
        ),
    )


async def _intake_rows(
    ids: _Ids,
    offer: _Offer,
    thread: _Thread,
    request: Request,
    leaf: UUID | None,
    new_rows: list[Message],
    principal: Principal,
    repos: Repositories,
    storage: Storage,
    hold: SpendHold,
) -> tuple[IntakeRows, ModelSpec]:
    """The accepted run's rows, and the model's spec. Nothing here queries: these rows are written by the
    intake's commit, which runs while the model is being asked (iris.app.runs.engine.streaming), without the
    ORM's unit of work (IntakeRows). A unique key that a concurrent request took first (the runId, a new
    threadId, a message position) fails that commit: RUN_ERROR run_not_stored."""
    session = thread.session
    new_session = session is None
    if session is None:
        session = repos.sessions.new_row(
            ids.thread_id, principal.user_id, thread.agent.pk, title=_title(new_rows)
        )
    if thread.awaiting is not None:
        thread.awaiting.pending_interrupts = None  # answered by this run (flushed by the intake's commit)
    model = offer.model
    run = repos.runs.running_row(
        external_id=ids.run_id,
        session_id=session.id,
        owner_id=principal.user_id,
        model=model.row,
        agent_version_id=thread.agent.version_pk,
        key_id=principal.key_id,
        run_pk=hold.hold_id,
    )
    spec = model_spec(model.row)
    for row in new_rows:
        row.run_id = run.id
        estimate_images(row, model.provider, spec, model.capabilities)
    caps = model.capabilities
    room = (
        max(caps.max_images - len(sent_images(request.history, caps, request.deleted)), 0)
        if caps.vision
        else 0
    )
    await mark_delivery(new_rows, spec, caps, storage, request_room=room, provider=model.provider)
    place(session.id, new_rows, thread.found.next_position)
    rows = IntakeRows(
        session=session,
        new_session=new_session,
        model_id=model.row.id,
        active_leaf_id=leaf,
        run=run,
        messages=new_rows,
    )
    return rows, spec


async def _rewind_point(
    messages: MessageRepository, session_id: UUID, history: Sequence[Message], rewind: Rewind
) -> BranchPoint:
    """Where an edit or a regeneration goes: after the edited message's parent (the edit is its
    sibling; any version of any user message can be edited), or after the active line's last user
    message (the new answer is a sibling of the old one)."""
    if rewind.kind == "regenerate":
        last_user = next((row for row in reversed(history) if row.role == "user"), None)
        if last_user is None:
            raise Unprocessable(
                "There is no message to regenerate an answer to.", code="nothing_to_regenerate"
            )
        return BranchPoint(base=last_user.id)
    target = next(
        (row for row in history if rewind.message_id in (row.external_id, str(row.id))), None
    ) or await messages.get_in_session(session_id, rewind.message_id or "")
    if target is None or target.role != "user":
        raise NotFound("No such message in this session.", code="message_not_found", field="editMessageId")
    return BranchPoint(base=target.parent_id)


def _title(rows: Sequence[Message]) -> str | None:
    """A session's title: the start of its first user text, or a note that it began with images."""
    first = next((row for row in rows if row.role == "user"), None)
    if first is None:
        return None
    text = " ".join(first.content.split())
    if not text:
        return "Image" if image_parts(first.parts) else None
    return text if len(text) <= 80 else text[:79].rstrip() + "…"


def _client_id(value: str, field: str) -> str:
    if not is_client_id(value):
        raise Unprocessable(
            f"'{field}' must be 1 to {MAX_ID_LENGTH} printable ASCII characters.",
            code="invalid_id",
            field=field,
        )
    return value
