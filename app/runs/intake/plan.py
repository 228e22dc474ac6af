"""The types intake hands on: the repositories it works with, the chat surface's edits of a thread
(:class:`Rewind`), and the checked run ready to execute (:class:`RunPlan`, what the engine runs)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.catalogue.cache import CatalogueCache
from iris.app.persistence.models import Message
from iris.app.persistence.repositories import (
    IntakeRows,
    McpServerRepository,
    MessageRepository,
    RunRepository,
    SessionRepository,
    UploadRepository,
)
from iris.app.runs.content.reasoning import NO_REASONING, ReasoningControl
from iris.app.runs.intake.fallbacks import NO_RETRIES, ModelChoice, RetryPolicy
from iris.app.runs.intake.interrupts import ResumeDecision
from iris.app.runs.intake.knobs import NO_OPTIONS
from iris.app.runs.intake.toolbox import RunTool
from iris.app.schemas.agents import AgentRef
from iris.providers import Capabilities, ModelSpec, Provider, RequestOptions, ToolSpec


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
    """How often a turn tries the model again on a retryable failure
    (:mod:`iris.app.runs.intake.fallbacks`)."""
    fallbacks: tuple[ModelChoice, ...] = ()
    """The model's fallbacks that suit this run, in order, each with the run's request built for it."""
    intake_rows: IntakeRows | None = None
    """What the intake's commit writes (:mod:`iris.app.persistence.repositories.intake_rows`); none for
    stateless chat, which stores nothing."""
    key_id: str | None = None
    """The API key that started the run (its audit rows name it)."""
    request_id: str | None = None
    """The starting request's ``x-request-id`` (its audit rows carry it)."""
    spend_hold: UUID | None = None
    """A stateless call's budget hold (ADR 0085), settled to its cost when it ends; ``None`` for a
    stored run (its closing transaction ends its hold)."""


@dataclass(frozen=True, slots=True)
class Rewind:
    """Chat-surface edits of a thread before its run: replace a user message (``edit``) or answer the
    last one again (``regenerate``). Both add a sibling
    (:mod:`iris.app.runs.conversations.branches`); what they replace stays, superseded, on its own branch."""

    kind: Literal["edit", "regenerate"]
    message_id: str | None = None
