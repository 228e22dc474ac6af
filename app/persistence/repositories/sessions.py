"""Chat sessions (threads) and their messages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, cast
from uuid import UUID

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import Table, and_, bindparam, exists, func, literal, or_, select, update
from sqlalchemy.orm import aliased
from uuid_utils.compat import uuid7

from iris.app.persistence.models import ChatSession, Message, Run
from iris.app.persistence.repositories._common import first_or_none, parse_uuid, utcnow
from iris.app.persistence.repositories.catalogue import GENERATION
from iris.app.persistence.repositories.intake_rows import IntakeRows, write_intake_rows

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
_TOUCH_SESSION = (
    update(_SESSIONS)
    .where(_SESSIONS.c.id == bindparam("session_id", type_=_SESSIONS.c.id.type))
    .values(last_activity_at=bindparam("now", type_=_SESSIONS.c.last_activity_at.type))
)
_MOVE_LEAF = (
    update(_SESSIONS)
    .where(_SESSIONS.c.id == bindparam("session_id", type_=_SESSIONS.c.id.type))
    .values(
        last_activity_at=bindparam("now", type_=_SESSIONS.c.last_activity_at.type),
        active_leaf_id=bindparam("leaf_id", type_=_SESSIONS.c.active_leaf_id.type),
    )
)
_LEAF_OF = select(ChatSession.active_leaf_id).where(ChatSession.id == bindparam("session_id"))
_EARLIER_RUN = aliased(Run)
_SAME_RUN_ID = aliased(Run)
_INTAKE = (
    select(
        ChatSession,
        Run,
        GENERATION,
        exists().where(_SAME_RUN_ID.external_id == bindparam("run_id")),
        select(func.max(Message.position))
        .where(Message.session_id == ChatSession.id)
        .correlate(ChatSession)
        .scalar_subquery(),
    )
    .select_from(select(literal(1).label("one")).subquery())
    .outerjoin(
        ChatSession,
        and_(ChatSession.thread_id == bindparam("thread_id"), ChatSession.owner_id == bindparam("owner_id")),
    )
    .outerjoin(
        Run,
        Run.id
        == select(_EARLIER_RUN.id)
        .where(_EARLIER_RUN.session_id == ChatSession.id)
        .order_by(_EARLIER_RUN.started_at.desc())
        .limit(1)
        .correlate(ChatSession)
        .scalar_subquery(),
    )
)
"""A run's first intake read, one statement (one row, even for a thread that does not exist yet)."""


class IntakeRead(NamedTuple):
    """What a run's intake reads first, in one statement (:meth:`SessionRepository.for_intake`)."""

    session: ChatSession | None
    """The owner's thread with this id, deleted or not; ``None`` for a new one."""
    latest_run: Run | None
    """The thread's most recent run: one still going, or one whose interrupts are open."""
    generation: int
    """The catalogue's generation (:mod:`iris.app.catalogue.cache`)."""
    run_id_taken: bool
    """Whether a run with the client's ``runId`` exists (any owner: run ids are global)."""
    next_position: int
    """The position after the thread's last message, superseded ones included (0 for a new thread)."""


class TreeRow(NamedTuple):
    """What a session's tree needs of a message: who it follows, when it was written, its shown id."""

    id: UUID
    parent_id: UUID | None
    position: int
    role: str
    external_id: str | None

    @property
    def shown_id(self) -> str:
        """The id history shows (and clients send back): the client's, else ours."""
        return self.external_id or str(self.id)


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

    async def for_intake(self, thread_id: str, owner_id: str, run_id: str) -> IntakeRead:
        """The thread, its latest run, the catalogue generation, whether ``run_id`` is taken and the
        next message position: what a run checks first, in one round trip instead of five."""
        row = (
            await self.session.execute(
                _INTAKE, {"thread_id": thread_id, "owner_id": owner_id, "run_id": run_id}
            )
        ).one()
        session, latest, generation, taken, last_position = row
        return IntakeRead(
            session=session,
            latest_run=latest,
            generation=int(generation),
            run_id_taken=bool(taken),
            next_position=0 if last_position is None else int(last_position) + 1,
        )

    async def list_for_owner(
        self, owner_id: str, agent_id: UUID, *, limit: int = 50, offset: int = 0, archived: bool = False
    ) -> Sequence[ChatSession]:
        """A user's sessions with one agent (the archived ones, or the others), pinned first, then the
        most recently active."""
        stmt = (
            select(ChatSession)
            .where(
                ChatSession.owner_id == owner_id,
                ChatSession.agent_id == agent_id,
                ChatSession.deleted_at.is_(None),
                ChatSession.archived_at.is_not(None) if archived else ChatSession.archived_at.is_(None),
            )
            .order_by(ChatSession.pinned.desc(), ChatSession.last_activity_at.desc(), ChatSession.id.desc())
            .limit(limit)
            .offset(offset)
        )
        return (await self.session.scalars(stmt)).all()

    def new_row(self, thread_id: str, owner_id: str, agent_id: UUID, *, title: str | None) -> ChatSession:
        """A new session's row, unsaved and not added: the intake writes it (:meth:`write_intake`)."""
        return ChatSession(
            id=uuid7(),
            thread_id=thread_id,
            owner_id=owner_id,
            agent_id=agent_id,
            title=title,
            last_activity_at=utcnow(),
            pinned=False,
        )

    async def write_intake(self, rows: IntakeRows) -> None:
        """Write an accepted run's thread, run and new messages in this transaction, without the ORM
        (:mod:`~iris.app.persistence.repositories.intake_rows`: one statement on PostgreSQL)."""
        await write_intake_rows(await self.session.connection(), rows)

    def create_for_owner(
        self,
        thread_id: str,
        owner_id: str,
        agent_id: UUID,
        model_id: UUID | None,
        *,
        title: str | None = None,
        active_leaf_id: UUID | None = None,
    ) -> ChatSession:
        """A new session with a caller-chosen id (AG-UI clients pick their ``threadId``), its primary key
        assigned; it is written at the transaction's next flush (its commit at the latest), which is
        also when a duplicate ``threadId`` fails."""
        session = self.new_row(thread_id, owner_id, agent_id, title=title)
        session.model_id = model_id
        session.active_leaf_id = active_leaf_id
        self.session.add(session)
        return session

    async def touch_id(self, session_id: UUID, *, leaf_id: UUID | None = None) -> None:
        """Record activity now (the sessions list sorts by it), by id; ``leaf_id``: the line now ends
        there (messages were added to it)."""
        if leaf_id is None:
            await self.session.execute(_TOUCH_SESSION, {"session_id": session_id, "now": utcnow()})
        else:
            await self.session.execute(
                _MOVE_LEAF, {"session_id": session_id, "now": utcnow(), "leaf_id": leaf_id}
            )

    async def update_flags(
        self,
        session: ChatSession,
        *,
        title: str | None = None,
        pinned: bool | None = None,
        archived: bool | None = None,
        model_id: UUID | None = None,
    ) -> None:
        """Rename, pin, archive or choose the model of a session (``None``: leave as it is); archiving
        keeps the first time it was."""
        if model_id is not None:
            session.model_id = model_id
        if title is not None:
            session.title = title
        if pinned is not None:
            session.pinned = pinned
        if archived is not None and archived != (session.archived_at is not None):
            session.archived_at = utcnow() if archived else None
        await self.session.flush()

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
        """Add ``messages`` (unsaved, no ``session_id``/``position`` yet) to the end of the session's
        active line, in order; the line then ends at the last of them."""
        if not messages:
            return
        chain(messages, await self.session.scalar(_LEAF_OF, {"session_id": session_id}))
        self.add_at(session_id, messages, await self.next_position(session_id))
        await self.session.flush()
        await SessionRepository(session=self.session).touch_id(session_id, leaf_id=messages[-1].id)

    async def next_position(self, session_id: UUID) -> int:
        """The position after the session's last message, superseded ones included."""
        last = await self.session.scalar(_NEXT_POSITION, {"session_id": session_id})
        return 0 if last is None else last + 1

    def add_at(self, session_id: UUID, messages: Sequence[Message], start: int) -> None:
        """Add ``messages`` (linked already: :func:`chain`) from position ``start`` on, written with the
        transaction (see :meth:`next_position`; the unique position makes a concurrent writer's commit
        fail)."""
        place(session_id, messages, start)
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

    async def known_ids(self, session_id: UUID, client_ids: Iterable[str]) -> dict[str, UUID]:
        """Which of these message ids (as history shows them: the client's, else ours) the session
        holds, on any branch: ``{shown id: primary key}``."""
        wanted = list(dict.fromkeys(client_ids))
        if not wanted:
            return {}
        ours = [pk for pk in map(parse_uuid, wanted) if pk is not None]
        stmt = select(Message.id, Message.external_id).where(
            Message.session_id == session_id,
            or_(Message.external_id.in_(wanted), Message.id.in_(ours))
            if ours
            else Message.external_id.in_(wanted),
        )
        found: dict[str, UUID] = {}
        for pk, external_id in (await self.session.execute(stmt)).all():
            found[external_id or str(pk)] = pk
            if str(pk) in wanted:
                found[str(pk)] = pk
        return found

    async def get_in_session(self, session_id: UUID, shown_id: str) -> Message | None:
        """The session's message with this id as history shows it, on any branch."""
        known = await self.known_ids(session_id, [shown_id])
        pk = known.get(shown_id)
        return None if pk is None else await self.get_one_or_none(Message.id == pk)

    async def tree(self, session_id: UUID) -> Sequence[TreeRow]:
        """Every message of the session (all branches) as the tree needs it, in the order written."""
        stmt = (
            select(Message.id, Message.parent_id, Message.position, Message.role, Message.external_id)
            .where(Message.session_id == session_id)
            .order_by(Message.position)
        )
        return [TreeRow(*row) for row in (await self.session.execute(stmt)).all()]

    async def of_run(self, run_id: UUID) -> Sequence[tuple[UUID, str, UUID | None]]:
        """``(id, role, parent_id)`` of the messages a run wrote (its input, then its answers), in order."""
        stmt = (
            select(Message.id, Message.role, Message.parent_id)
            .where(Message.run_id == run_id)
            .order_by(Message.position)
        )
        return [(pk, role, parent) for pk, role, parent in (await self.session.execute(stmt)).all()]

    async def locked(self, pk: UUID) -> Message | None:
        """The message, locked against concurrent writers until the transaction ends (PostgreSQL;
        SQLite's writers take turns anyway)."""
        stmt = select(Message).where(Message.id == pk).with_for_update()
        return (await self.session.scalars(stmt)).one_or_none()

    async def every_message(self, session_id: UUID) -> Sequence[Message]:
        """Every message of the session, on every branch, in the order written (an export)."""
        stmt = select(Message).where(Message.session_id == session_id).order_by(Message.position)
        return (await self.session.scalars(stmt)).all()

    async def in_order(self, ids: Sequence[UUID]) -> list[Message]:
        """These messages, in the order they were written (a line of the tree, root first)."""
        if not ids:
            return []
        stmt = select(Message).where(Message.id.in_(ids)).order_by(Message.position)
        return list((await self.session.scalars(stmt)).all())

    async def move_line(self, session_id: UUID, line: Sequence[UUID]) -> None:
        """Make ``line`` (the ids of a path from a first message) the session's active line: every other
        live message is superseded, and the line's superseded ones come back. The caller moves the
        session's leaf in the same transaction."""
        now = utcnow()
        await self.session.execute(
            update(Message)
            .where(
                Message.session_id == session_id,
                Message.superseded_at.is_(None),
                Message.id.not_in(line) if line else Message.id.is_not(None),
            )
            .values(superseded_at=now)
            .execution_options(synchronize_session=False)
        )
        if line:
            await self.session.execute(
                update(Message)
                .where(Message.id.in_(line), Message.superseded_at.is_not(None))
                .values(superseded_at=None)
                .execution_options(synchronize_session=False)
            )


def place(session_id: UUID, messages: Sequence[Message], start: int) -> None:
    """Put ``messages`` in the session from position ``start`` on (their rows are not added anywhere)."""
    for offset, message in enumerate(messages):
        message.session_id = session_id
        message.position = start + offset


def chain(messages: Sequence[Message], parent_id: UUID | None) -> None:
    """Give ``messages`` their ids and link each to the one before it, the first to ``parent_id``."""
    for message in messages:
        message.id = message.id or uuid7()
        message.parent_id = parent_id
        parent_id = message.id
