"""Everything a run checks and records before its stream opens (SPEC §6).

Any failure here is a problem+json answer and no stream: protocol version, thread ownership, run id,
message shapes, attachment URLs, model resolution and the capability check all come before the
first event. What the run uses is resolved in :mod:`app.runs.intake.resolution` (thread, agent, model,
tools) and what it adds in :mod:`app.runs.intake.new_input` (new messages, resumed interrupts); here they
are checked together and, on success, the new user messages, the ``running`` run row and the thread's
are handed to the intake's commit (:class:`~app.persistence.repositories.IntakeRows`), which the run
starts while it calls the model (:mod:`app.runs.engine.streaming`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.agui.input import RunAgentInput, check_protocol_version, parse_messages
from app.catalogue.cache import CatalogueCache
from app.catalogue.views import model_spec
from app.errors import Conflict, NotFound, Unprocessable
from app.media.inline_uploads import InlineUploads
from app.media.pipeline import check_images
from app.persistence.models import Message
from app.persistence.repositories import (
    IntakeRows,
    McpServerRepository,
    MessageRepository,
    RunRepository,
    SessionRepository,
    UploadRepository,
    chain,
    place,
)
from app.runs.content.attachments import check_new_attachments, mark_delivery, notices
from app.runs.content.context import check_request_fits, sent_images
from app.runs.content.parts import deleted_uploads, image_parts
from app.runs.content.reasoning import NO_REASONING, ReasoningControl, reasoning_control
from app.runs.conversations.branches import BranchPoint, branch_point, leaf_of, line_from
from app.runs.intake.fallbacks import (
    NO_RETRIES,
    ModelChoice,
    Request,
    RetryPolicy,
    fallback_choices,
    retry_policy,
)
from app.runs.intake.interrupts import ResumeDecision
from app.runs.intake.knobs import NO_OPTIONS
from app.runs.intake.new_input import estimate_images, new_messages, resume_decisions
from app.runs.intake.resolution import (
    offered_frontend_tools,
    offered_server_tools,
    resolve_agent,
    resolve_model,
    resolve_thread,
    system_prompt,
)
from app.runs.intake.toolbox import RunTool, Toolbox
from app.schemas.agents import AgentRef
from app.security.auth import Principal
from app.security.quotas import admit_run
from app.security.url_policy import UrlPolicy
from app.settings import Settings
from app.storage.base import Storage
from app.threads import check_thread_id, is_client_id
from providers import Capabilities, ModelSpec, Provider, RequestOptions, ToolSpec
from providers.registry import ProviderRegistry

MAX_ID_LENGTH = 128


class Repositories:
    """The repositories intake works with, all on the intake's ``session``, and the process's catalogue.

    Each is made when first used: advanced-alchemy's repository constructor does real work, and a run on
    a new thread uses two of the five."""

    def __init__(self, session: AsyncSession, catalogue: CatalogueCache) -> None:
        self.session = session
        self.catalogue = catalogue

    @functools.cached_property
    def mcp_servers(self) -> McpServerRepository:
        return McpServerRepository(session=self.session)

    @functools.cached_property
    def sessions(self) -> SessionRepository:
        return SessionRepository(session=self.session)

    @functools.cached_property
    def messages(self) -> MessageRepository:
        return MessageRepository(session=self.session)

    @functools.cached_property
    def runs(self) -> RunRepository:
        return RunRepository(session=self.session)

    @functools.cached_property
    def uploads(self) -> UploadRepository:
        return UploadRepository(session=self.session)


@dataclass(frozen=True, slots=True)
class RunPlan:
    """A checked run, ready to execute: everything the orchestrator needs, no ORM objects."""

    run_pk: UUID
    run_id: str
    session_pk: UUID
    thread_id: str
    owner_id: str
    provider: Provider
    model: ModelSpec
    model_ref: str
    capabilities: Capabilities
    history: Sequence[Message]
    """The thread as stored once this run's new messages were added: the model's context."""
    deleted_uploads: frozenset[str]
    system: str | None
    server_tools: tuple[RunTool, ...]
    frontend_tools: tuple[ToolSpec, ...]
    max_tool_iterations: int
    """Model turns the run may take (its agent version's figure, else ``IRIS_MAX_TOOL_ITERATIONS``)."""
    resume: tuple[ResumeDecision, ...]
    ignored_resume_ids: tuple[str, ...]
    agent: AgentRef | None = None
    """The agent version the run uses (none for stateless chat, which has no agent)."""
    parent_pk: UUID | None = None
    """The line's last message before the run's answers: what they follow."""
    user_message_id: str | None = None
    """The id (as history shows it) of the user message this run stored or regenerates an answer to;
    ``RUN_STARTED`` carries it so a chat client can edit that message without re-reading history."""
    reasoning: ReasoningControl = NO_REASONING
    attachment_notices: tuple[dict[str, Any], ...] = ()
    """The thread's documents and audio this model gets as text or not at all (``RUN_STARTED``)."""
    request: RequestOptions = NO_OPTIONS
    """The client's sampling and format knobs (the OpenAI gateway's), checked against the model's
    ``Capabilities.parameters``; the tool loop adds the system prompt, tools and reasoning."""
    retry: RetryPolicy = NO_RETRIES
    """How often a turn tries the model again on a retryable failure (:mod:`app.runs.intake.fallbacks`)."""
    fallbacks: tuple[ModelChoice, ...] = ()
    """The model's fallbacks that suit this run, in order, each with the run's request built for it."""
    intake_rows: IntakeRows | None = None
    """What the intake's commit writes (:mod:`app.persistence.repositories.intake_rows`); none for
    stateless chat, which stores nothing."""


@dataclass(frozen=True, slots=True)
class Rewind:
    """Chat-surface edits of a thread before its run: replace a user message (``edit``) or answer the
    last one again (``regenerate``). Both add a sibling
    (:mod:`app.runs.conversations.branches`); what they replace stays, superseded, on its own branch."""

    kind: Literal["edit", "regenerate"]
    message_id: str | None = None


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
) -> RunPlan:
    """Check the run (every query comes first), then add its new messages and its run row to the
    intake's session without writing them: the intake's commit does, while the model is asked.
    ``inline`` takes the documents and audio sent as bytes: checked with the messages, counted and
    stored only once the run is accepted (their rows join the intake's transaction)."""
    check_protocol_version(body.protocol_version)
    thread_id = check_thread_id(body.thread_id)
    run_id = _client_id(body.run_id, "runId")
    inbound = parse_messages(body.messages)
    for message in inbound:
        _client_id(message.id, f"{getattr(message, 'field', 'messages')}.id")
    forwarded = body.forwarded_props if isinstance(body.forwarded_props, dict) else {}

    found = await repos.sessions.for_intake(thread_id, principal.user_id, run_id)
    catalogue = await repos.catalogue.at(repos.session, found.generation)
    session = resolve_thread(found.session)
    agent = await resolve_agent(catalogue, session, forwarded, principal)
    history: list[Message] = []
    known: dict[str, UUID] = {}
    latest = found.latest_run
    awaiting = latest if latest is not None and latest.pending_interrupts else None
    if session is not None:
        if latest is not None and latest.status == "running":
            raise Conflict("A run is already in progress on this thread.", code="run_in_progress")
        history = list(await repos.messages.active_history(session.id))
        known = await repos.messages.known_ids(session.id, (m.id for m in inbound))
        point = (
            await _rewind_point(repos.messages, session.id, history, rewind)
            if rewind is not None
            else branch_point(inbound, known, history, resuming=bool(body.resume))
        )
        if point is not None:
            if awaiting is not None and rewind is None:
                raise Unprocessable(
                    "This thread is waiting for an answer to its interrupt: answer it before branching.",
                    code="interrupt_pending",
                    field="messages",
                )
            history = await line_from(repos.messages, session.id, history, point)
    elif rewind is not None:
        raise Unprocessable("Editing or regenerating needs an existing session.", code="session_required")
    model = await resolve_model(catalogue, registry, agent, session, forwarded, settings)
    reasoning_defaults = {**model.row.options, **agent.reasoning_defaults}  # the agent's win over the model's
    reasoning = reasoning_control(forwarded, reasoning_defaults, model.capabilities, model.row.ref)
    tools_on = forwarded.get("enableTools") is not False
    server_tools = (
        await offered_server_tools(agent.config, model.capabilities, toolbox, repos.mcp_servers)
        if tools_on
        else ()
    )
    frontend_tools = offered_frontend_tools(body, server_tools, model.capabilities) if tools_on else ()

    new_rows = await new_messages(
        [m for m in inbound if m.id not in known],
        history,
        principal=principal,
        thread_id=thread_id,
        uploads=repos.uploads,
        settings=settings,
        policy=policy,
        inline=inline,
    )
    check_images(
        model.capabilities,
        [p["mimeType"] for row in new_rows for p in image_parts(row.parts)],
        model_ref=model.row.ref,
    )
    check_new_attachments(new_rows, model.capabilities, model_ref=model.row.ref)
    decisions, ignored = resume_decisions(awaiting, body)
    if not new_rows and not decisions and not (history and history[-1].role in ("user", "tool")):
        raise Unprocessable(
            "There is nothing new to answer: send a new user message.",
            code="no_new_message",
            field="messages",
        )

    deleted = await deleted_uploads(repos.uploads, history)  # the new rows' uploads were just found
    chain(new_rows, history[-1].id if history else None)
    leaf = leaf_of(history, new_rows)
    history += new_rows
    system = system_prompt(agent.config, body)
    offered_tools = [*(tool.spec for tool in server_tools), *frontend_tools]
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
        wants_reasoning=reasoning.request is not None,
        storage_publicly_reachable=settings.storage_publicly_reachable,
    )
    fallbacks = await fallback_choices(
        model.row,
        models=catalogue,
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
    if found.run_id_taken:
        raise Conflict(
            "This runId was already used; every run needs a new one.", code="run_exists", field="runId"
        )
    position = found.next_position
    if inline is not None:
        await inline.admit(repos.session, principal)
    await admit_run(repos.session, principal, settings)  # last check: refusals use no quota
    if inline is not None:  # accepted: the inline files are stored (the intake removes them on failure)
        await inline.store(repos.uploads)

    # Accepted. Nothing below queries: these rows are written by the intake's commit, which runs while
    # the model is being asked (app.runs.engine.streaming), without the ORM's unit of work (IntakeRows). A
    # unique key that a concurrent request took first (the runId, a new threadId, a message position)
    # fails that commit: RUN_ERROR run_not_stored.
    if session is None:
        session = repos.sessions.new_row(thread_id, principal.user_id, agent.pk, title=_title(new_rows))
        new_session = True
    else:
        new_session = False
    if awaiting is not None:
        awaiting.pending_interrupts = None  # answered by this run (flushed by the intake's commit)
    run = repos.runs.running_row(
        external_id=run_id,
        session_id=session.id,
        owner_id=principal.user_id,
        model=model.row,
        agent_version_id=agent.version_pk,
    )
    spec = model_spec(model.row)
    for row in new_rows:
        row.run_id = run.id
        estimate_images(row, model.provider.id, spec, model.capabilities)
    caps = model.capabilities
    room = max(caps.max_images - len(sent_images(history, caps, deleted)), 0) if caps.vision else 0
    await mark_delivery(new_rows, spec, caps, storage, request_room=room)
    place(session.id, new_rows, position)
    rows = IntakeRows(
        session=session,
        new_session=new_session,
        model_id=model.row.id,
        active_leaf_id=leaf,
        run=run,
        messages=new_rows,
    )
    answered = [row for row in new_rows if row.role == "user"] or (
        [row for row in history if row.role == "user"][-1:] if rewind is not None else []
    )
    return RunPlan(
        intake_rows=rows,
        run_pk=run.id,
        run_id=run_id,
        session_pk=session.id,
        thread_id=thread_id,
        owner_id=principal.user_id,
        provider=model.provider,
        model=spec,
        model_ref=model.row.ref,
        capabilities=model.capabilities,
        history=history,
        parent_pk=leaf,
        deleted_uploads=deleted,
        system=system,
        server_tools=server_tools,
        frontend_tools=frontend_tools,
        max_tool_iterations=agent.config.max_tool_iterations or settings.max_tool_iterations,
        resume=tuple(decisions),
        ignored_resume_ids=tuple(ignored),
        agent=agent.ref,
        user_message_id=(answered[-1].external_id or str(answered[-1].id)) if answered else None,
        reasoning=reasoning,
        retry=retry_policy(model.row, settings),
        fallbacks=fallbacks,
        attachment_notices=tuple(notices(history, model.capabilities, model_ref=model.row.ref)),
    )


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
