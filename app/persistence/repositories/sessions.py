"""Chat sessions (threads) and their messages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast
from uuid import UUID

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import Table, bindparam, func, insert, select, update
from uuid_utils.compat import uuid7

from app.persistence.models import ChatSession, Message
from app.persistence.repositories._common import first_or_none, utcnow

# Statements built once (why: see _common).
_SESSION_FOR_OWNER = select(ChatSession).where(
    ChatSession.thread_id == bindparam("thread_id"), ChatSession.owner_id == bindparam("owner_id")
)
_ACTIVE_HISTORY = (
    select(Message)
    .where(Message.session_id == bindparam("session_id"), Message.superseded_at.is_(None))
    .order_by(Message.position)
)
_NEXT_POSITION = select(func.max(Message.position)).where(Message.session_id == bindparam("session_id"))
_SESSIONS = cast("Table", ChatSession.__table__)
_MESSAGES = cast("Table", Message.__table__)
_TOUCH_SESSION = (
    update(_SESSIONS)
    .where(_SESSIONS.c.id == bindparam("session_id", type_=_SESSIONS.c.id.type))
    .values(last_activity_at=bindparam("now", type_=_SESSIONS.c.last_activity_at.type))
)


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
        return await first_or_none(
            self.session, _SESSION_FOR_OWNER, {"thread_id": thread_id, "owner_id": owner_id}
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
