"""An accepted run's rows — its thread (new, or moved on), its ``running`` run and its new messages —
written by the intake's commit in as few driver calls as the engine allows (ADR 0055).

PostgreSQL gets one statement: the thread's insert or update and the run's insert are data-modifying
``WITH`` parts of the messages' insert (one array per column, unnested), so the whole intake is one
round trip before ``COMMIT``; foreign keys are checked at the statement's end, when all three are
there. SQLite, which has no data-modifying ``WITH``, gets three calls into the driver (in process: no
round trips), the messages in one ``executemany``. Neither goes through the ORM's unit of work, which
was most of the commit's CPU; the values are the rows' own, each bound by its column's type (as
:meth:`~iris.app.persistence.repositories.RunEventRepository.append_batch` does), so what is stored is what
a flush of the same objects stored. A duplicate key (the ``runId``, a new ``threadId``, a message
position a concurrent request took first) still fails the statement, and so the commit.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast
from uuid import UUID

from sqlalchemy import Table
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from iris.app.persistence.models import ChatSession, Message, Run
from iris.app.persistence.repositories._common import utcnow
from iris.app.persistence.repositories._driver_sql import bound, execute, insert_sql, pg_marks, pg_type

_SESSION_COLUMNS = (
    "id",
    "owner_id",
    "thread_id",
    "agent_id",
    "model_id",
    "title",
    "last_activity_at",
    "active_leaf_id",
    "pinned",
    "created_at",
    "updated_at",
)
_MOVE_COLUMNS = ("model_id", "active_leaf_id", "last_activity_at", "updated_at", "id")
_RUN_COLUMNS = (
    "id",
    "external_id",
    "session_id",
    "owner_id",
    "status",
    "model_id",
    "model_ref",
    "agent_version_id",
    "key_id",
    "started_at",
    "heartbeat_at",
    "created_at",
    "updated_at",
)
_MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "external_id",
    "role",
    "content",
    "parts",
    "metadata",
    "run_id",
    "position",
    "parent_id",
    "created_at",
    "updated_at",
)
_JSON = ("parts", "metadata")
"""Sent to PostgreSQL as text arrays (as bound: JSON text) and cast per element."""
_SESSIONS = cast("Table", ChatSession.__table__)
_RUNS = cast("Table", Run.__table__)
_MESSAGES = cast("Table", Message.__table__)


def _move(marks: Sequence[str]) -> str:
    """The update of a thread the run continues: its model, its line's end, its activity."""
    model, leaf, active, updated, pk = marks
    sets = f"model_id = {model}, active_leaf_id = {leaf}, last_activity_at = {active}, updated_at = {updated}"
    return f"UPDATE sessions SET {sets} WHERE id = {pk}"  # noqa: S608


_SQLITE_NEW_SESSION = insert_sql("sessions", _SESSION_COLUMNS, ["?"] * len(_SESSION_COLUMNS))
_SQLITE_MOVE_SESSION = _move(["?"] * len(_MOVE_COLUMNS))
_SQLITE_RUN = insert_sql("runs", _RUN_COLUMNS, ["?"] * len(_RUN_COLUMNS))
_SQLITE_MESSAGES = insert_sql("messages", _MESSAGE_COLUMNS, ["?"] * len(_MESSAGE_COLUMNS))


def _pg_statement(new_session: bool) -> str:
    """One statement: the thread's part (``$1…``), the run's, then the messages' arrays."""
    if new_session:
        session_part = insert_sql("sessions", _SESSION_COLUMNS, pg_marks(_SESSIONS, _SESSION_COLUMNS, 1))
        after = len(_SESSION_COLUMNS)
    else:
        marks = pg_marks(_SESSIONS, _MOVE_COLUMNS, 1)
        session_part = _move(marks)
        after = len(_MOVE_COLUMNS)
    run_part = insert_sql("runs", _RUN_COLUMNS, pg_marks(_RUNS, _RUN_COLUMNS, after + 1))
    first = after + len(_RUN_COLUMNS) + 1
    arrays = ", ".join(
        f"${first + i}::{'text' if name in _JSON else pg_type(_MESSAGES, name)}[]"
        for i, name in enumerate(_MESSAGE_COLUMNS)
    )
    picked = ", ".join(f"m.{name}::jsonb" if name in _JSON else f"m.{name}" for name in _MESSAGE_COLUMNS)
    return (
        f"WITH thread_write AS ({session_part}), run_write AS ({run_part}) "  # noqa: S608
        f"INSERT INTO messages ({', '.join(_MESSAGE_COLUMNS)}) SELECT {picked} "
        f"FROM unnest({arrays}) AS m({', '.join(_MESSAGE_COLUMNS)})"
    )


_PG_NEW_SESSION = _pg_statement(new_session=True)
_PG_MOVE_SESSION = _pg_statement(new_session=False)


@dataclass(frozen=True, slots=True)
class IntakeRows:
    """What an accepted run's intake writes: unsaved rows, never added to an ORM session."""

    session: ChatSession
    """A new thread (unsaved, every column set), or the loaded one, which is left unchanged: ``model_id``
    and ``active_leaf_id`` below are written to it."""
    new_session: bool
    model_id: UUID
    active_leaf_id: UUID | None
    run: Run
    messages: Sequence[Message]
    """Linked and placed already (``session_id``, ``position``, ``parent_id``, ``run_id``)."""


async def write_intake_rows(connection: AsyncConnection, rows: IntakeRows) -> None:
    """Write ``rows`` in the connection's transaction (one statement, or three on SQLite)."""
    dialect = connection.dialect
    now = utcnow()
    thread_values = _thread_values(dialect, rows, now)
    run_values = _run_values(dialect, rows.run, now)
    messages = [_message_values(dialect, m, now) for m in rows.messages]
    if dialect.name == "postgresql":
        columns = [list(column) for column in zip(*messages, strict=True)] or [[] for _ in _MESSAGE_COLUMNS]
        statement = _PG_NEW_SESSION if rows.new_session else _PG_MOVE_SESSION
        await execute(connection, statement, (*thread_values, *run_values, *columns))
        return
    await execute(
        connection, _SQLITE_NEW_SESSION if rows.new_session else _SQLITE_MOVE_SESSION, tuple(thread_values)
    )
    await execute(connection, _SQLITE_RUN, tuple(run_values))
    if messages:
        await execute(connection, _SQLITE_MESSAGES, [tuple(row) for row in messages])


def _thread_values(dialect: Dialect, rows: IntakeRows, now: dt.datetime) -> list[Any]:
    """The thread's row (a new thread) or the columns an accepted run moves (a loaded one)."""
    session = rows.session
    if not rows.new_session:
        return bound(
            dialect, _SESSIONS, _MOVE_COLUMNS, (rows.model_id, rows.active_leaf_id, now, now, session.id)
        )
    return bound(
        dialect,
        _SESSIONS,
        _SESSION_COLUMNS,
        (
            session.id,
            session.owner_id,
            session.thread_id,
            session.agent_id,
            rows.model_id,
            session.title,
            now,
            rows.active_leaf_id,
            False,
            now,
            now,
        ),
    )


def _run_values(dialect: Dialect, run: Run, now: dt.datetime) -> list[Any]:
    """The run's row."""
    return bound(
        dialect,
        _RUNS,
        _RUN_COLUMNS,
        (
            run.id,
            run.external_id,
            run.session_id,
            run.owner_id,
            run.status,
            run.model_id,
            run.model_ref,
            run.agent_version_id,
            run.key_id,
            run.started_at,
            run.heartbeat_at,
            now,
            now,
        ),
    )


def _message_values(dialect: Dialect, m: Message, now: dt.datetime) -> list[Any]:
    """One message's row."""
    return bound(
        dialect,
        _MESSAGES,
        _MESSAGE_COLUMNS,
        (
            m.id,
            m.session_id,
            m.external_id,
            m.role,
            m.content,
            m.parts,
            m.meta if m.meta is not None else {},
            m.run_id,
            m.position,
            m.parent_id,
            now,
            now,
        ),
    )
