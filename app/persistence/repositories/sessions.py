"""Repositories: advanced-alchemy's async repository plus the named queries the service needs.

Controllers never build SQL; they call these methods.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar, cast
from uuid import UUID

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import Select, Table, bindparam, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from uuid_utils.compat import uuid7

from app.persistence.models import Agent, ChatSession, Message, ModelRow, QuotaUsage, Run, RunEvent, Upload

T = TypeVar("T")


def utcnow() -> dt.datetime:
    """Timezone-aware now; every timestamp Iris writes is UTC."""
    return dt.datetime.now(dt.UTC)


def parse_uuid(value: str) -> UUID | None:
    """``UUID(value)`` or ``None`` for anything that is not one (ids in paths are untrusted)."""
    try:
        return UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None


# The lookups every run makes, built once: building a statement costs as much as running it on SQLite,
# and a statement object also keeps its cache key (values come in as bound parameters).
_MODEL_BY_ID = select(ModelRow).where(ModelRow.id == bindparam("id"))
_MODEL_BY_REF = select(ModelRow).where(
    ModelRow.provider == bindparam("provider"), ModelRow.model_id == bindparam("model_id")
)
_AGENT_BY_ID = select(Agent).where(Agent.id == bindparam("id"))
_AGENT_BY_SLUG = select(Agent).where(Agent.slug == bindparam("slug"))
_SESSION_FOR_OWNER = select(ChatSession).where(
    ChatSession.thread_id == bindparam("thread_id"), ChatSession.owner_id == bindparam("owner_id")
)
_ACTIVE_HISTORY = (
    select(Message)
    .where(Message.session_id == bindparam("session_id"), Message.superseded_at.is_(None))
    .order_by(Message.position)
)
_NEXT_POSITION = select(func.max(Message.position)).where(Message.session_id == bindparam("session_id"))
_RUN_ID_TAKEN = select(Run.id).where(Run.external_id == bindparam("external_id")).limit(1)
_LATEST_RUN = (
    select(Run).where(Run.session_id == bindparam("session_id")).order_by(Run.started_at.desc()).limit(1)
)
_RUNS = cast("Table", Run.__table__)
_SESSIONS = cast("Table", ChatSession.__table__)
_MESSAGES = cast("Table", Message.__table__)
_FINISH_RUN = (
    update(_RUNS)
    .where(_RUNS.c.id == bindparam("run_id", type_=_RUNS.c.id.type), _RUNS.c.status == "running")
    .values(
        {
            column: bindparam(f"new_{column}", type_=_RUNS.c[column].type)
            for column in (
                "status",
                "error_code",
                "usage",
                "pending_interrupts",
                "finished_at",
                "heartbeat_at",
            )
        }
    )
)
_TOUCH_SESSION = (
    update(_SESSIONS)
    .where(_SESSIONS.c.id == bindparam("session_id", type_=_SESSIONS.c.id.type))
    .values(last_activity_at=bindparam("now", type_=_SESSIONS.c.last_activity_at.type))
)
_UPLOAD_AT = select(Upload).where(
    Upload.owner_id == bindparam("owner_id"),
    Upload.thread_id == bindparam("thread_id"),
    Upload.bucket == bindparam("bucket"),
    Upload.path == bindparam("path"),
)


async def _one(session: Any, stmt: Select[tuple[T]], params: dict[str, Any]) -> T | None:
    """The first row's entity of a prebuilt statement, or ``None`` (typed, unlike ``session.scalar``)."""
    row: T | None = await session.scalar(stmt, params)
    return row


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
            return await self.get_by_id(as_uuid)
        provider, sep, model_id = ref.partition("/")
        if not sep or not provider or not model_id:
            return None
        return await _one(self.session, _MODEL_BY_REF, {"provider": provider, "model_id": model_id})

    async def get_by_id(self, model_id: UUID) -> ModelRow | None:
        """A model by its primary key, or ``None``."""
        return await _one(self.session, _MODEL_BY_ID, {"id": model_id})


class AgentRepository(SQLAlchemyAsyncRepository[Agent]):
    """Agents, looked up by slug."""

    model_type = Agent

    async def get_by_slug(self, slug: str) -> Agent | None:
        """The agent with this slug, or ``None``."""
        return await _one(self.session, _AGENT_BY_SLUG, {"slug": slug})

    async def get_by_id(self, agent_id: UUID) -> Agent | None:
        """The agent with this primary key, or ``None``."""
        return await _one(self.session, _AGENT_BY_ID, {"id": agent_id})

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
        return await _one(self.session, _SESSION_FOR_OWNER, {"thread_id": thread_id, "owner_id": owner_id})

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

    def create_for_owner(
        self,
        thread_id: str,
        owner_id: str,
        agent_id: UUID,
        model_id: UUID | None,
        *,
        title: str | None = None,
    ) -> ChatSession:
        """A new session with a caller-chosen id (AG-UI clients pick their ``threadId``), its primary key
        assigned; it is written at the transaction's next flush (its commit at the latest), which is
        also when a duplicate ``threadId`` fails."""
        session = ChatSession(
            id=uuid7(),
            thread_id=thread_id,
            owner_id=owner_id,
            agent_id=agent_id,
            model_id=model_id,
            title=title,
            last_activity_at=utcnow(),
        )
        self.session.add(session)
        return session

    def touch(self, session: ChatSession) -> None:
        """Record activity now (the sessions list sorts by it); written with the transaction."""
        session.last_activity_at = utcnow()

    async def touch_id(self, session_id: UUID) -> None:
        """:meth:`touch` by id, for writers that hold no loaded row."""
        await self.session.execute(_TOUCH_SESSION, {"session_id": session_id, "now": utcnow()})

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
        self.add_at(session_id, messages, await self.next_position(session_id))
        await self.session.flush()

    async def next_position(self, session_id: UUID) -> int:
        """The position after the session's last message, superseded ones included."""
        last = await self.session.scalar(_NEXT_POSITION, {"session_id": session_id})
        return 0 if last is None else last + 1

    async def append_values(self, session_id: UUID, values: Sequence[dict[str, Any]]) -> None:
        """Insert messages given as column values (``role``, ``content``, ``parts``, ``metadata``,
        ``run_id``, ``external_id``) after the last one, in order, in one statement: for writers that
        never read the rows back (no ORM objects to track)."""
        if not values:
            return
        start = await self.next_position(session_id)
        await self.session.execute(
            insert(_MESSAGES),
            [
                {**value, "session_id": session_id, "position": start + offset}
                for offset, value in enumerate(values)
            ],
        )

    def add_at(self, session_id: UUID, messages: Sequence[Message], start: int) -> None:
        """Add ``messages`` from position ``start`` on, written with the transaction (see
        :meth:`next_position`; the unique position makes a concurrent writer's commit fail)."""
        for offset, message in enumerate(messages):
            message.id = message.id or uuid7()
            message.session_id = session_id
            message.position = start + offset
        self.session.add_all(messages)

    async def active_history(self, session_id: UUID) -> Sequence[Message]:
        """Every message that still counts (not superseded), oldest first: the model's context."""
        return (await self.session.scalars(_ACTIVE_HISTORY, {"session_id": session_id})).all()

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

    def add_running(self, *, external_id: str, session_id: UUID, owner_id: str, model: ModelRow) -> Run:
        """A new ``running`` run, its primary key assigned, written with the transaction (where a
        concurrent request that took the same ``runId`` first makes the commit fail)."""
        now = utcnow()
        run = Run(
            id=uuid7(),
            external_id=external_id,
            session_id=session_id,
            owner_id=owner_id,
            status="running",
            model_id=model.id,
            model_ref=model.ref,
            started_at=now,
            heartbeat_at=now,
        )
        self.session.add(run)
        return run

    async def external_id_taken(self, external_id: str) -> bool:
        """Whether a run with this client ``runId`` exists (any owner: run ids are global)."""
        return await _one(self.session, _RUN_ID_TAKEN, {"external_id": external_id}) is not None

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
        values = {
            "run_id": run_id,
            "new_status": status,
            "new_error_code": error_code,
            "new_usage": usage,
            "new_pending_interrupts": pending_interrupts,
            "new_finished_at": now,
            "new_heartbeat_at": now,
        }
        result = await self.session.execute(_FINISH_RUN, values)
        return bool(getattr(result, "rowcount", 0))

    async def latest_for_session(self, session_id: UUID) -> Run | None:
        """The thread's most recent run: the one still going, or the one whose interrupts are open."""
        return await _one(self.session, _LATEST_RUN, {"session_id": session_id})

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

    async def append_batch(self, run_id: UUID, events: Sequence[tuple[int, Any]]) -> None:
        """Insert ``(sequence, event)`` pairs in one statement (an event: a JSON-able object, or
        ``msgspec.Raw`` JSON stored as it is).

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
        values = {"owner_id": owner_id, "thread_id": thread_id, "bucket": bucket, "path": path}
        return await _one(self.session, _UPLOAD_AT, values)

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
