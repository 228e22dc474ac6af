"""Repositories: advanced-alchemy's async repository plus the named queries the service needs.

Controllers never build SQL; they call these methods.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any, cast
from uuid import UUID

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import Table, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.persistence.models import Agent, ChatSession, Message, ModelRow, QuotaUsage, Run, RunEvent, Upload


def utcnow() -> dt.datetime:
    """Timezone-aware now; every timestamp Iris writes is UTC."""
    return dt.datetime.now(dt.UTC)


def parse_uuid(value: str) -> UUID | None:
    """``UUID(value)`` or ``None`` for anything that is not one (ids in paths are untrusted)."""
    try:
        return UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


class ModelRepository(SQLAlchemyAsyncRepository[ModelRow]):
    """The model catalogue."""

    model_type = ModelRow

    async def list_catalogue(self, *, include_disabled: bool) -> Sequence[ModelRow]:
        """Models ordered by provider and name; disabled ones only when asked."""
        stmt = select(ModelRow).order_by(ModelRow.provider, ModelRow.name)
        if not include_disabled:
            stmt = stmt.where(ModelRow.enabled.is_(True))
        return (await self.session.scalars(stmt)).all()

    async def list_guest_visible(self) -> Sequence[ModelRow]:
        """Enabled models marked guest-visible, the list seed 002's model picker shows."""
        stmt = (
            select(ModelRow)
            .where(ModelRow.enabled.is_(True), ModelRow.guest_visible.is_(True))
            .order_by(ModelRow.provider, ModelRow.name)
        )
        return (await self.session.scalars(stmt)).all()

    async def list_from_file(self) -> Sequence[ModelRow]:
        """Rows the models file manages (enabled or not)."""
        return (await self.session.scalars(select(ModelRow).where(ModelRow.from_file.is_(True)))).all()

    async def get_by_ref(self, ref: str) -> ModelRow | None:
        """A model by its UUID or by ``provider/modelId`` (split on the first slash)."""
        as_uuid = parse_uuid(ref)
        if as_uuid is not None:
            return await self.get_one_or_none(id=as_uuid)
        provider, sep, model_id = ref.partition("/")
        if not sep or not provider or not model_id:
            return None
        return await self.get_one_or_none(provider=provider, model_id=model_id)


class AgentRepository(SQLAlchemyAsyncRepository[Agent]):
    """Agents, looked up by slug."""

    model_type = Agent

    async def get_by_slug(self, slug: str) -> Agent | None:
        """The agent with this slug, or ``None``."""
        return await self.get_one_or_none(slug=slug)

    async def uses_model(self, model_id: UUID) -> bool:
        """Whether any agent has this model as its default (it may then not be deleted)."""
        return await self.exists(default_model_id=model_id)


class SessionRepository(SQLAlchemyAsyncRepository[ChatSession]):
    """Sessions (threads). Deleted sessions are invisible to every method here."""

    model_type = ChatSession

    async def get_owned(self, thread_id: str, owner_id: str) -> ChatSession | None:
        """The owner's session with this ``threadId`` if it exists and is not deleted; else ``None``."""
        return await self.get_one_or_none(
            ChatSession.thread_id == thread_id,
            ChatSession.owner_id == owner_id,
            ChatSession.deleted_at.is_(None),
        )

    async def get_for_owner(self, thread_id: str, owner_id: str) -> ChatSession | None:
        """The owner's session with this ``threadId``, deleted or not (a deleted one keeps its id)."""
        return await self.get_one_or_none(
            ChatSession.thread_id == thread_id, ChatSession.owner_id == owner_id
        )

    async def list_for_owner(
        self, owner_id: str, agent_id: UUID, *, limit: int = 50, offset: int = 0
    ) -> Sequence[ChatSession]:
        """A user's sessions with one agent, most recently active first."""
        stmt = (
            select(ChatSession)
            .where(
                ChatSession.owner_id == owner_id,
                ChatSession.agent_id == agent_id,
                ChatSession.deleted_at.is_(None),
            )
            .order_by(ChatSession.last_activity_at.desc(), ChatSession.id.desc())
            .limit(limit)
            .offset(offset)
        )
        return (await self.session.scalars(stmt)).all()

    async def create_for_owner(
        self,
        thread_id: str,
        owner_id: str,
        agent_id: UUID,
        model_id: UUID | None,
        *,
        title: str | None = None,
    ) -> ChatSession:
        """A new session with a caller-chosen id (AG-UI clients pick their ``threadId``)."""
        return await self.add(
            ChatSession(
                thread_id=thread_id,
                owner_id=owner_id,
                agent_id=agent_id,
                model_id=model_id,
                title=title,
                last_activity_at=utcnow(),
            ),
            auto_refresh=False,  # every column is set here: reading the row back is a wasted round trip
        )

    async def touch(self, session: ChatSession) -> None:
        """Record activity now (the sessions list sorts by it)."""
        session.last_activity_at = utcnow()
        await self.session.flush()

    async def touch_id(self, session_id: UUID) -> None:
        """:meth:`touch` by id, for writers that hold no loaded row."""
        await self.session.execute(
            update(ChatSession).where(ChatSession.id == session_id).values(last_activity_at=utcnow())
        )

    async def soft_delete(self, session: ChatSession) -> None:
        """Hide the session; nothing is hard-deleted."""
        session.deleted_at = utcnow()
        await self.session.flush()


class MessageRepository(SQLAlchemyAsyncRepository[Message]):
    """Messages of a session, ordered by ``position``."""

    model_type = Message

    async def append(
        self,
        session_id: UUID,
        *,
        role: str,
        content: str,
        parts: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        run_id: UUID | None = None,
        external_id: str | None = None,
    ) -> Message:
        """Add a message after the last one of the session (superseded rows keep their positions)."""
        message = Message(
            role=role,
            content=content,
            parts=parts,
            meta=meta or {},
            run_id=run_id,
            external_id=external_id,
        )
        await self.append_many(session_id, [message])
        return message

    async def append_many(self, session_id: UUID, messages: Sequence[Message]) -> None:
        """Add ``messages`` (unsaved, no ``session_id``/``position`` yet) after the last one, in order."""
        last = await self.session.scalar(
            select(func.max(Message.position)).where(Message.session_id == session_id)
        )
        start = 0 if last is None else last + 1
        for offset, message in enumerate(messages):
            message.session_id = session_id
            message.position = start + offset
        self.session.add_all(messages)
        await self.session.flush()

    async def active_history(self, session_id: UUID) -> Sequence[Message]:
        """Every message that still counts (not superseded), oldest first: the model's context."""
        stmt = (
            select(Message)
            .where(Message.session_id == session_id, Message.superseded_at.is_(None))
            .order_by(Message.position)
        )
        return (await self.session.scalars(stmt)).all()

    async def list_page(
        self,
        session_id: UUID,
        *,
        include_superseded: bool = False,
        after_position: int = -1,
        limit: int = 100,
    ) -> Sequence[Message]:
        """A page of history after ``after_position``, oldest first."""
        stmt = select(Message).where(Message.session_id == session_id, Message.position > after_position)
        if not include_superseded:
            stmt = stmt.where(Message.superseded_at.is_(None))
        stmt = stmt.order_by(Message.position).limit(limit)
        return (await self.session.scalars(stmt)).all()

    async def stored_external_ids(self, session_id: UUID, external_ids: Iterable[str]) -> set[str]:
        """Which of these client message ids the session already holds."""
        wanted = list(external_ids)
        if not wanted:
            return set()
        stmt = select(Message.external_id).where(
            Message.session_id == session_id, Message.external_id.in_(wanted)
        )
        return {value for value in (await self.session.scalars(stmt)).all() if value is not None}

    async def supersede_from(self, session_id: UUID, position: int) -> int:
        """Mark every live message at or after ``position`` superseded; returns how many."""
        result = await self.session.execute(
            update(Message)
            .where(
                Message.session_id == session_id,
                Message.position >= position,
                Message.superseded_at.is_(None),
            )
            .values(superseded_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return int(getattr(result, "rowcount", 0) or 0)


class RunRepository(SQLAlchemyAsyncRepository[Run]):
    """Runs, found by the client's ``runId``."""

    model_type = Run

    async def get_by_external_id(self, external_id: str) -> Run | None:
        """The run the client named, or ``None``."""
        return await self.get_one_or_none(external_id=external_id)

    async def usage_for_session(self, session_id: UUID) -> list[dict[str, Any]]:
        """The recorded usage of every finished run of a session, oldest first (runs without any skipped)."""
        stmt = (
            select(Run.usage)
            .where(Run.session_id == session_id, Run.usage.is_not(None))
            .order_by(Run.started_at)
        )
        return [dict(usage) for usage in (await self.session.scalars(stmt)).all() if usage]

    async def active_for_session(self, session_id: UUID) -> Run | None:
        """The session's run that is still going, if any."""
        stmt = (
            select(Run)
            .where(Run.session_id == session_id, Run.status == "running")
            .order_by(Run.started_at.desc())
            .limit(1)
        )
        return (await self.session.scalars(stmt)).first()

    async def beat(self, run_ids: Sequence[UUID]) -> list[UUID]:
        """These runs are alive now; returns those whose cancellation was requested meanwhile."""
        if not run_ids:
            return []
        await self.session.execute(
            update(Run).where(Run.id.in_(run_ids), Run.status == "running").values(heartbeat_at=utcnow())
        )
        stmt = select(Run.id).where(Run.id.in_(run_ids), Run.cancel_requested_at.is_not(None))
        return list((await self.session.scalars(stmt)).all())

    async def request_cancel(self, run_id: UUID) -> bool:
        """Ask whichever process runs it to stop; ``False`` when it is not running any more."""
        result = await self.session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == "running")
            .values(cancel_requested_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return bool(getattr(result, "rowcount", 0))

    async def finish(
        self,
        run_id: UUID,
        *,
        status: str,
        error_code: str | None,
        usage: dict[str, Any] | None,
        pending_interrupts: list[dict[str, Any]] | None = None,
    ) -> bool:
        """Record how a running run ended; ``False`` if it was no longer running (declared lost)."""
        now = utcnow()
        result = await self.session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == "running")
            .values(
                status=status,
                error_code=error_code,
                usage=usage,
                pending_interrupts=pending_interrupts,
                finished_at=now,
                heartbeat_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        return bool(getattr(result, "rowcount", 0))

    async def latest_for_session(self, session_id: UUID) -> Run | None:
        """The thread's most recent run: the one still going, or the one whose interrupts are open."""
        stmt = select(Run).where(Run.session_id == session_id).order_by(Run.started_at.desc()).limit(1)
        return (await self.session.scalars(stmt)).first()

    async def running_count(self, owner_id: str) -> int:
        """How many of this owner's runs are going now (on any process)."""
        stmt = select(func.count()).select_from(Run).where(Run.owner_id == owner_id, Run.status == "running")
        return int(await self.session.scalar(stmt) or 0)

    async def stale(self, cutoff: dt.datetime) -> Sequence[Run]:
        """Runs still marked running whose heartbeat stopped before ``cutoff``."""
        stmt = select(Run).where(Run.status == "running", Run.heartbeat_at < cutoff)
        return (await self.session.scalars(stmt)).all()

    async def mark_lost(self, run_id: UUID, cutoff: dt.datetime) -> bool:
        """Fail a run that is still stale; ``False`` if another process got there first or it revived."""
        result = await self.session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == "running", Run.heartbeat_at < cutoff)
            .values(status="failed", error_code="run_lost", finished_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return bool(getattr(result, "rowcount", 0))


RUN_EVENTS_CHANNEL = "iris_run_events"
"""PostgreSQL ``NOTIFY`` channel: its payload is the id of a run whose log grew (``app.runs.notices``)."""


class RunEventRepository(SQLAlchemyAsyncRepository[RunEvent]):
    """A run's event log, appended in batches and replayed by sequence."""

    model_type = RunEvent

    async def append_batch(self, run_id: UUID, events: Sequence[tuple[int, dict[str, Any]]]) -> None:
        """Insert ``(sequence, event)`` pairs in one statement.

        On PostgreSQL the same transaction notifies :data:`RUN_EVENTS_CHANNEL`: the notice is delivered
        at commit, when followers in other processes can read the new events.
        """
        if not events:
            return
        # Core insert: one executemany, no ORM bookkeeping for rows nobody reads back here.
        await self.session.execute(
            insert(cast("Table", RunEvent.__table__)),
            [{"run_id": run_id, "sequence": seq, "event": event} for seq, event in events],
        )
        if self.session.get_bind().dialect.name == "postgresql":
            await self.session.execute(select(func.pg_notify(RUN_EVENTS_CHANNEL, str(run_id))))

    async def last_sequence(self, run_id: UUID) -> int:
        """The highest sequence number logged for the run (0 when none)."""
        last = await self.session.scalar(select(func.max(RunEvent.sequence)).where(RunEvent.run_id == run_id))
        return int(last or 0)

    async def list_after(self, run_id: UUID, after: int, *, limit: int = 500) -> Sequence[RunEvent]:
        """Events with ``sequence > after``, in order."""
        stmt = (
            select(RunEvent)
            .where(RunEvent.run_id == run_id, RunEvent.sequence > after)
            .order_by(RunEvent.sequence)
            .limit(limit)
        )
        return (await self.session.scalars(stmt)).all()


class UploadRepository(SQLAlchemyAsyncRepository[Upload]):
    """Upload records; every lookup is scoped to an owner."""

    model_type = Upload

    async def get_owned(self, upload_id: UUID, owner_id: str) -> Upload | None:
        """The upload if ``owner_id`` made it."""
        return await self.get_one_or_none(id=upload_id, owner_id=owner_id)

    async def get_by_path(self, owner_id: str, thread_id: str, bucket: str, path: str) -> Upload | None:
        """The upload stored at ``bucket/path`` by this owner for this thread."""
        return await self.get_one_or_none(owner_id=owner_id, thread_id=thread_id, bucket=bucket, path=path)

    async def delete_owned(self, upload_id: UUID, owner_id: str, thread_id: str) -> Upload | None:
        """Remove the record of one of this owner's uploads in this thread; the removed row, or ``None``."""
        upload = await self.get_one_or_none(id=upload_id, owner_id=owner_id, thread_id=thread_id)
        if upload is not None:
            await self.delete(upload.id)
        return upload

    async def existing_ids(self, upload_ids: Iterable[UUID]) -> set[UUID]:
        """Which of these uploads still exist."""
        wanted = list(upload_ids)
        if not wanted:
            return set()
        return set((await self.session.scalars(select(Upload.id).where(Upload.id.in_(wanted)))).all())


class QuotaRepository(SQLAlchemyAsyncRepository[QuotaUsage]):
    """Quota counters: one atomic add per use, shared by every process through the database."""

    model_type = QuotaUsage

    async def add_usage(self, subject: str, quota: str, window: tuple[int, int], amount: int) -> int:
        """Add ``amount`` to the subject's use of ``quota`` in ``window`` (start, end); the new total.

        One ``INSERT … ON CONFLICT DO UPDATE … RETURNING``: atomic on both engines, and it holds the row
        (PostgreSQL) or the write lock (SQLite) until the caller's transaction ends.
        """
        dialect = postgresql if self.session.get_bind().dialect.name == "postgresql" else sqlite
        stmt = dialect.insert(QuotaUsage).values(
            subject=subject, quota=quota, window_start=window[0], window_end=window[1], amount=amount
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=["subject", "quota", "window_start"],
            set_={"amount": QuotaUsage.amount + stmt.excluded.amount},
        ).returning(QuotaUsage.amount)
        return int((await self.session.execute(stmt)).scalar_one())

    async def prune(self, now: int, *, subject: str | None = None, quota: str | None = None) -> None:
        """Forget windows that have ended: all of them, or one subject's of one quota."""
        stmt = delete(QuotaUsage).where(QuotaUsage.window_end <= now)
        if subject is not None and quota is not None:
            stmt = stmt.where(QuotaUsage.subject == subject, QuotaUsage.quota == quota)
        await self.session.execute(stmt.execution_options(synchronize_session=False))
