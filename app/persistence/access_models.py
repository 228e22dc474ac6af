"""ORM tables of access control: API keys, the audit log and the spend ledger.

Kept apart from :mod:`iris.app.persistence.models` (which imports this module, so every table is on the
one shared metadata) because they belong to the governance features, not to chats and runs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from uuid import UUID

from advanced_alchemy.base import BigIntBase, UUIDv7AuditBase
from advanced_alchemy.types import GUID, DateTimeUTC, JsonB
from sqlalchemy import Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column


class ApiKey(UUIDv7AuditBase):
    """A long-lived key (``iris_sk_…``) that acts as its owner. Only the SHA-256 of the whole key is
    kept (ADR 0081); ``prefix`` is the part shown again, to tell keys apart."""

    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_owner_id", "owner_id"),)

    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(200))
    owner_id: Mapped[str] = mapped_column(String(200))
    """The user (or the service identity an admin named) the key acts as."""
    role: Mapped[str] = mapped_column(String(16))
    """``user`` or ``admin``: only an admin can make an admin key."""
    agents: Mapped[list[str] | None] = mapped_column(JsonB, nullable=True)
    """Agent slugs the key may use; ``None``: any."""
    models: Mapped[list[str] | None] = mapped_column(JsonB, nullable=True)
    """Model refs (``provider/modelId``) the key may use; ``None``: any."""
    surfaces: Mapped[list[str] | None] = mapped_column(JsonB, nullable=True)
    """Surfaces the key may call (``agui``, ``openai``, ``anthropic``…); ``None``: any."""
    requests_per_minute: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tokens_per_minute: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """Model tokens the runs the key started this minute may use before the next is refused."""
    budget_day_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    """What the runs the key starts may cost per UTC day before the next is refused (``None``: no budget)."""
    budget_month_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    """The same per UTC calendar month."""
    """Requests the key may make per minute, over all processes; ``None``: no limit of its own."""
    created_by: Mapped[str] = mapped_column(String(200))
    expires_at: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)
    last_used_address: Mapped[str | None] = mapped_column(String(64), nullable=True)


class AuditEntry(BigIntBase):
    """One thing done, appended and never changed: who (``actor``, and the key they came with), what
    (``action``: the method and route, e.g. ``POST /api/models``; ``target``: the path), when, with which
    outcome, and the request and trace ids to find it in logs and traces. Never a body, secret or token."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_at", "at"), Index("ix_audit_log_actor", "actor"))

    at: Mapped[dt.datetime] = mapped_column(DateTimeUTC(timezone=True))
    actor: Mapped[str] = mapped_column(String(200))
    actor_key_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    action: Mapped[str] = mapped_column(String(120))
    target: Mapped[str] = mapped_column(String(400))
    status: Mapped[int] = mapped_column(Integer)
    address: Mapped[str | None] = mapped_column(String(64), nullable=True)
    request_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    trace_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    detail: Mapped[dict[str, Any] | None] = mapped_column(JsonB, nullable=True)
    """What a run's row adds: the tool, its server, the outcome, the duration and (only when
    ``IRIS_AUDIT_TOOL_ARGUMENTS`` keeps them) the call's arguments; ``None`` for a request's row."""


class SpendEntry(UUIDv7AuditBase):
    """One request's place in the budgets (ADR 0085): a hold of its estimated cost taken at admission
    (``held_until`` set: a lease, past which it counts no more), and for a stateless call (``kind``
    ``call``) its settled cost and tokens once it ends (``held_until`` ``None``). A run's hold has the
    run's id and goes with its closing transaction: the run row keeps its cost. Never any content."""

    __tablename__ = "spend_ledger"
    __table_args__ = (
        Index("ix_spend_ledger_owner_id_created_at", "owner_id", "created_at"),
        Index("ix_spend_ledger_key_id_created_at", "key_id", "created_at"),
        Index("ix_spend_ledger_agent_id_created_at", "agent_id", "created_at"),
    )

    kind: Mapped[str] = mapped_column(String(8))
    """``run`` (a stored run's hold) or ``call`` (a stateless call: ``/v1``, ``/api/llm/chat``)."""
    owner_id: Mapped[str] = mapped_column(String(200))
    key_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    agent_id: Mapped[UUID | None] = mapped_column(GUID(length=16), nullable=True)
    surface: Mapped[str] = mapped_column(String(32))
    model_ref: Mapped[str | None] = mapped_column(String(200), nullable=True)
    reserved_usd: Mapped[float] = mapped_column(Float)
    """The estimated cost held at admission."""
    held_until: Mapped[dt.datetime | None] = mapped_column(DateTimeUTC(timezone=True), nullable=True)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    output_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
