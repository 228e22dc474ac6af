"""ORM tables. Ids are UUIDv7, timestamps UTC, JSON columns portable (JSON on SQLite, JSONB on PostgreSQL).

Owners are the JWT ``sub`` (users live in the identity provider, not here), so ``owner_id`` is a
plain string, not a foreign key. Client-chosen ids (AG-UI ``runId`` and message ids) are kept in
``external_id`` beside our own UUID primary keys, and the client's ``threadId`` in ``sessions.thread_id``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from uuid import UUID

from advanced_alchemy.base import BigIntBase, UUIDv7AuditBase
from advanced_alchemy.types import DateTimeUTC, JsonB
from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

# Re-exported: importing the ORM tables registers the access tables on the one shared metadata too.
from iris.app.persistence.access_models import ApiKey as ApiKey
from iris.app.persistence.access_models import AuditEntry as AuditEntry
from iris.app.persistence.access_models import SpendEntry as SpendEntry
from iris.app.persistence.mcp_grant_models import McpGrant as McpGrant

POSITION_MAX = 2_147_483_647
"""The largest ``Integer`` every engine stores (PostgreSQL's ``integer``): message positions and event
numbers stay below it, and a query bound past it is refused before it reaches the database."""


class ModelRow(UUIDv7AuditBase):
    """A model in the catalogue: which provider plugin serves it and what it can take."""

    __tablename__ = "models"
    __table_args__ = (UniqueConstraint("provider", "model_id", name="uq_models_provider_model_id"),)

    name: Mapped[str] = mapped_column(String(200))
    provider: Mapped[str] = mapped_column(String(64))
    model_id: Mapped[str] = mapped_column(String(200))
    type: Mapped[str] = mapped_column(String(16))
    supports_tools: Mapped[bool] = mapped_column(Boolean, default=False)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    guest_visible: Mapped[bool] = mapped_column(Boolean, default=False)
    options: Mapped[dict[str, Any]] = mapped_column(JsonB, default=dict)
    max_images: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_image_bytes: Mapped[int | None] = mapped_column(Integer, nullable=True)
    from_file: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """Managed by the models file: dropped from it, the row is disabled (rows added by the API never are)."""
    fallbacks: Mapped[list[str]] = mapped_column(JsonB, default=list, server_default=text("'[]'"))
    """Models (``provider/modelId``) a run moves to, in order, when this one fails before any content."""
    retry_attempts: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """Requests per model turn on a retryable failure; ``None`` follows ``IRIS_RETRY_ATTEMPTS``."""
    retry_backoff_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    """The first retry's wait; ``None`` follows ``IRIS_RETRY_BACKOFF_SECONDS``."""

    @property
    def ref(self) -> str:
        """``provider/modelId``, the human-readable way to name a model in requests."""
        return f"{self.provider}/{self.model_id}"


class Agent(UUIDv7AuditBase):
    """An agent the frontend chats with (seed 002's ``agentSlug``), as it is now.

    Every change bumps ``version`` and records an immutable :class:`AgentVersion`, which runs point at:
    this row is what the next run uses, the versions are what earlier runs used. Agents are disabled,
    never deleted (their sessions stay readable).
    """

    __tablename__ = "agents"

    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    instructions: Mapped[str] = mapped_column(Text, default="")
    """The system prompt."""
    default_model_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("models.id", ondelete="RESTRICT"), nullable=True
    )
    model_ids: Mapped[list[str]] = mapped_column(JsonB, default=list)
    """The models the agent offers (catalogue ids, in picker order); the default is one of them."""
    tools: Mapped[list[str]] = mapped_column(JsonB, default=list)
    """Tool names (``current_time``, ``{server}__{tool}``) and whole MCP servers (``mcp:{server}/*``)."""
    max_tool_iterations: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """Model turns a run may take; ``None`` follows ``IRIS_MAX_TOOL_ITERATIONS``."""
    guest_access: Mapped[bool] = mapped_column(Boolean, default=False)
    reasoning: Mapped[dict[str, Any]] = mapped_column(JsonB, default=dict)
    """Reasoning defaults (``enableThinking``, ``reasoningEffort``) between the request and the model's."""
    enabled: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    from_file: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """Managed by the models file (``[[agents]]``): dropped from it, the agent is disabled."""
    version: Mapped[int] = mapped_column(Integer, default=1, server_default=text("1"))
    """The number of the newest :class:`AgentVersion`."""
    budget_day_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    """What the agent's runs may cost per UTC day, over all users, before the next is refused."""
    budget_month_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    """The same per UTC calendar month (``None``: no budget)."""


class AgentVersion(UUIDv7AuditBase):
    """One version of an agent, never changed once written: what a run that points at it ran with."""

    __tablename__ = "agent_versions"
    __table_args__ = (UniqueConstraint("agent_id", "version", name="uq_agent_versions_agent_id_version"),)

    agent_id: Mapped[UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    snapshot: Mapped[dict[str, Any]] = mapped_column(JsonB)
    """The whole definition as it was (``iris.app.schemas.agents.AgentSnapshot``)."""


class McpServer(UUIDv7AuditBase):
    """An MCP server whose tools agents may use: a command to start (``stdio``) or a URL (``http``).

    ``headers`` and ``env`` are stored as written: a value naming ``${VAR}`` is expanded from the
    environment each time the server is connected, never stored expanded."""

    __tablename__ = "mcp_servers"

    name: Mapped[str] = mapped_column(String(32), unique=True)
    transport: Mapped[str] = mapped_column(String(8))
    url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    headers: Mapped[dict[str, str]] = mapped_column(JsonB, default=dict)
    command: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    args: Mapped[list[str]] = mapped_column(JsonB, default=list)
    env: Mapped[dict[str, str]] = mapped_column(JsonB, default=dict)
    approval: Mapped[str] = mapped_column(String(16), default="destructive")
    tool_approval: Mapped[dict[str, str]] = mapped_column(JsonB, default=dict)
    """Per-tool rules (``{tool: "always" | "never" | "destructive"}``) over the server's ``approval``."""
    connect_timeout_seconds: Mapped[float] = mapped_column(Float, default=10.0)
    call_timeout_seconds: Mapped[float] = mapped_column(Float, default=60.0)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    from_file: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """Managed by the models file: dropped from it, the server is disabled."""
    oauth: Mapped[dict[str, Any] | None] = mapped_column(JsonB, nullable=True)
    """How Iris authorizes at an OAuth-protected server (``grant``, ``clientId``, ``clientSecret`` as
    ``${VAR}``, ``scopes``); ``None``: it needs no sign-in (see :mod:`iris.app.mcp.oauth`)."""


class ChatSession(UUIDv7AuditBase):
    """A conversation: the AG-UI thread and seed 002's session are the same row.

    Its messages form a tree (``Message.parent_id``); ``active_leaf_id`` is the last message of the line
    being shown and continued. It is a plain column, not a foreign key: sessions and messages would
    reference each other, which needs constraints added after both tables exist (SQLite cannot), and a
    new session is written together with its first message.
    """

    __tablename__ = "sessions"
    __table_args__ = (
        # The sessions list: the owner's sessions with one agent, pinned first, then by last activity.
        Index("ix_sessions_owner_agent_list", "owner_id", "agent_id", "pinned", "last_activity_at"),
        UniqueConstraint("owner_id", "thread_id", name="uq_sessions_owner_id_thread_id"),
    )

    owner_id: Mapped[str] = mapped_column(String(128))
    # The client's AG-UI ``threadId`` (seed 002's ``sessionId``), exactly as sent; unique per owner.
    thread_id: Mapped[str] = mapped_column(String(128))
    agent_id: Mapped[UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    model_id: Mapped[UUID | None] = mapped_column(ForeignKey("models.id", ondelete="SET NULL"), nullable=True)
    title: Mapped[str | None] = mapped_column(String(200), nullable=True)
    last_activity_at: Mapped[dt.datetime] = mapped_column(DateTimeUTC(timezone=True))
    deleted_at: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)
    active_leaf_id: Mapped[UUID | None] = mapped_column(nullable=True)
    pinned: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    archived_at: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)


class Run(UUIDv7AuditBase):
    """One agent run on a thread; its events live in ``run_events``."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_session_status", "session_id", "status"),
        Index("ix_runs_owner_status", "owner_id", "status"),  # the concurrent-runs quota counts by owner
        # One run going per thread, whichever process started it: a second one's intake commit fails.
        Index(
            "uq_runs_one_running_per_session",
            "session_id",
            unique=True,
            sqlite_where=text("status = 'running'"),
            postgresql_where=text("status = 'running'"),
        ),
    )

    external_id: Mapped[str] = mapped_column(String(128), unique=True)
    session_id: Mapped[UUID] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    owner_id: Mapped[str] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16))
    model_id: Mapped[UUID | None] = mapped_column(ForeignKey("models.id", ondelete="SET NULL"), nullable=True)
    model_ref: Mapped[str | None] = mapped_column(String(270), nullable=True)
    agent_version_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("agent_versions.id", ondelete="SET NULL"), nullable=True
    )
    """The agent version the run ran with (``None`` for runs from before versions were recorded)."""
    key_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """The API key that started the run (``None``: a token): spend per key."""
    started_at: Mapped[dt.datetime] = mapped_column(DateTimeUTC(timezone=True))
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)
    cancel_requested_at: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)
    error_code: Mapped[str | None] = mapped_column(String(64), nullable=True)
    usage: Mapped[dict[str, Any] | None] = mapped_column(JsonB, nullable=True)
    pending_interrupts: Mapped[list[dict[str, Any]] | None] = mapped_column(JsonB, nullable=True)

    # Never loaded (lazy="raise"): declared so that one flush inserts a new session before its run.
    session: Mapped[ChatSession] = relationship(lazy="raise")


class Message(UUIDv7AuditBase):
    """One message of a session. ``parts`` holds canonical parts only, never a signed URL.

    Messages form a tree: ``parent_id`` is the message this one follows (``None`` for a first message),
    so an edit or a regeneration adds a sibling. ``position`` is the order messages were written in
    (a child always comes after its parent). ``superseded_at`` is set while a message is off the
    session's active line (the path to ``ChatSession.active_leaf_id``) and cleared when a switch brings
    it back: the live rows are exactly that line, which is what the model and the history read.
    """

    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint("session_id", "position", name="uq_messages_session_id_position"),
        UniqueConstraint("session_id", "external_id", name="uq_messages_session_id_external_id"),
        Index("ix_messages_parent_id", "parent_id"),
    )

    session_id: Mapped[UUID] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    external_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text, default="")
    parts: Mapped[list[dict[str, Any]] | None] = mapped_column(JsonB, nullable=True)
    # "metadata" is reserved on declarative classes, so the attribute is ``meta``.
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JsonB, default=dict)
    run_id: Mapped[UUID | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"), nullable=True)
    position: Mapped[int] = mapped_column(Integer)
    parent_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), nullable=True
    )

    # Never loaded (lazy="raise"): declared so that one flush inserts a message's session and run first.
    session: Mapped[ChatSession] = relationship(lazy="raise")
    run: Mapped[Run | None] = relationship(lazy="raise")
    superseded_at: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)


class RunEvent(BigIntBase):
    """One AG-UI event of a run, as sent (its ``sequence`` is the SSE ``id:``)."""

    __tablename__ = "run_events"
    __table_args__ = (UniqueConstraint("run_id", "sequence", name="uq_run_events_run_id_sequence"),)

    run_id: Mapped[UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    sequence: Mapped[int] = mapped_column(Integer)
    event: Mapped[dict[str, Any]] = mapped_column(JsonB)


class Upload(UUIDv7AuditBase):
    """An image, PDF or audio file a user uploaded for a thread. The thread may not exist yet, so no
    foreign key. ``width``/``height`` are an image's (0 otherwise); ``pages``, ``thumbnail_path`` and
    ``text_path`` (the stored JSON array of page texts) a PDF's; ``duration_seconds`` audio's."""

    __tablename__ = "uploads"
    __table_args__ = (Index("ix_uploads_owner_thread", "owner_id", "thread_id"),)

    owner_id: Mapped[str] = mapped_column(String(128))
    thread_id: Mapped[str] = mapped_column(String(128))
    bucket: Mapped[str] = mapped_column(String(100))
    path: Mapped[str] = mapped_column(String(500), unique=True)
    mime_type: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(255), default="")
    size: Mapped[int] = mapped_column(Integer)
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    pages: Mapped[int | None] = mapped_column(Integer, default=None)
    duration_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    thumbnail_path: Mapped[str | None] = mapped_column(String(500), default=None)
    text_path: Mapped[str | None] = mapped_column(String(500), default=None)


class QuotaUsage(BigIntBase):
    """How much of one quota a subject used in one fixed window; shared by every process.

    ``subject`` is a user id, or ``addr:<ip>`` for limits on client addresses. Windows are aligned to
    multiples of their length in Unix seconds (``window_start``); rows past ``window_end`` are pruned.
    """

    __tablename__ = "quota_usage"
    __table_args__ = (
        UniqueConstraint("subject", "quota", "window_start", name="uq_quota_usage_subject_quota_window"),
        Index("ix_quota_usage_window_end", "window_end"),
    )

    subject: Mapped[str] = mapped_column(String(200))
    quota: Mapped[str] = mapped_column(String(32))
    window_start: Mapped[int] = mapped_column(BigInteger)
    window_end: Mapped[int] = mapped_column(BigInteger)
    amount: Mapped[int] = mapped_column(BigInteger)


class ModelCooldown(BigIntBase):
    """A model's recent retryable failures, shared by every process: ``failures`` counted since
    ``window_start`` (Unix seconds); past ``IRIS_COOLDOWN_FAILURES`` it is cooled down until
    ``cooled_until``, and runs with fallbacks skip it meanwhile. ``last_code`` is the run-error code of
    its latest failure (``provider_rate_limit``, …), for the operator's listing."""

    __tablename__ = "model_cooldowns"

    model_ref: Mapped[str] = mapped_column(String(270), unique=True)
    failures: Mapped[int] = mapped_column(Integer)
    window_start: Mapped[float] = mapped_column(Float)
    cooled_until: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_code: Mapped[str | None] = mapped_column(String(64), nullable=True)


class CatalogueGeneration(BigIntBase):
    """One row (``id`` 1) whose ``generation`` grows with every write to ``models``, ``agents`` and
    ``agent_versions``, in the writing transaction: database triggers bump it (migration
    ``0014_catalogue_generation``), so no writer can forget to, in any process. A process's cached
    catalogue (:mod:`iris.app.catalogue.cache`) is valid while the generation it was read at is current."""

    __tablename__ = "catalogue_generation"

    generation: Mapped[int] = mapped_column(BigInteger)


class GatewayResponse(UUIDv7AuditBase):
    """A stored answer of ``POST /v1/responses`` (OpenAI's id ``resp_<id.hex>``): the ``Response``
    object as answered (``body``) and the request's input items as listed by ``input_items``
    (``input_items``). ``previous_id`` is the response it continued, without a foreign key: deleting a
    response leaves the ones after it readable. Its item ids carry its id (ADR 0074), so an
    ``item_reference`` finds its response without an index of items."""

    __tablename__ = "gateway_responses"
    __table_args__ = (Index("ix_gateway_responses_owner", "owner_id"),)

    owner_id: Mapped[str] = mapped_column(String(128))
    previous_id: Mapped[UUID | None] = mapped_column(nullable=True)
    model_ref: Mapped[str] = mapped_column(String(270))
    body: Mapped[dict[str, Any]] = mapped_column(JsonB)
    input_items: Mapped[list[dict[str, Any]]] = mapped_column(JsonB)
