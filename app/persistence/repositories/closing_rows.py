"""A run's event log and its closing write — how it ended, the log's last events, its answer's
messages and the thread's new line end — in as few driver calls as the engine allows (ADR 0055),
like the intake's (:mod:`~iris.app.persistence.repositories.intake_rows`).

Why not the ORM or Core statements with lists of rows: SQLAlchemy then runs every column's bind
processor on every row in Python and its session's execute path around each statement, most of a
run's closing transaction. Here each event is encoded once, to the JSON text the client was sent, and
the values are bound by their columns' own types, so what is stored is what those statements stored.

PostgreSQL gets one statement: the run's update is the first ``WITH`` part and every other part reads
from it, so nothing is written when the run was no longer running (declared lost); the log and the
messages are unnested arrays; the messages take the positions after the thread's last one, read in
the same statement; it notifies :data:`RUN_EVENTS_CHANNEL` (delivered at commit, when followers in
other processes can read the new events). SQLite gets up to five calls into the driver (in process:
no round trips), the log and the messages each one ``executemany``. A message position a concurrent
writer took first still fails the statement (the unique position), and so the commit.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast
from uuid import UUID

import msgspec
from sqlalchemy import Table
from sqlalchemy.ext.asyncio import AsyncConnection
from uuid_utils.compat import uuid7

from iris.app.persistence.models import AuditEntry, ChatSession, Message, Run, RunEvent, SpendEntry
from iris.app.persistence.repositories._common import utcnow
from iris.app.persistence.repositories._driver_sql import bound, execute, insert_sql, pg_type

RUN_EVENTS_CHANNEL = "iris_run_events"
"""PostgreSQL ``NOTIFY`` channel: its payload is the id of a run whose log grew
(``iris.app.runs.store.notices``)."""

_RUNS = cast("Table", Run.__table__)
_RUN_EVENTS = cast("Table", RunEvent.__table__)
_MESSAGES = cast("Table", Message.__table__)
_SESSIONS = cast("Table", ChatSession.__table__)
_AUDIT = cast("Table", AuditEntry.__table__)

_OUTCOME_COLUMNS = (
    "status",
    "error_code",
    "usage",
    "pending_interrupts",
    "finished_at",
    "heartbeat_at",
    "updated_at",
)
_MESSAGE_COLUMNS = ("id", "external_id", "role", "content", "parts", "metadata", "parent_id")
"""What differs between an answer's messages; the rest (thread, run, position, times) is computed."""
_JSON = ("usage", "pending_interrupts", "parts", "metadata")
"""Bound as JSON text (the engine's serializer) and cast on PostgreSQL."""


@dataclass(frozen=True, slots=True)
class AnswerMessage:
    """One message the run's answer adds (an assistant turn, a tool result)."""

    role: str
    external_id: str
    content: str
    meta: dict[str, Any]
    parts: list[dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class AuditRow:
    """One audit log row a run adds (an approval answered, a tool call made), written with its close."""

    at: dt.datetime
    actor: str
    action: str
    target: str
    status: int
    detail: dict[str, Any]
    trace_id: str | None = None
    key_id: str | None = None
    """The API key the run was started with."""
    request_id: str | None = None
    """The ``x-request-id`` of the request that started the run."""


@dataclass(frozen=True, slots=True)
class ClosingRows:
    """What a run's closing transaction writes."""

    run_id: UUID
    session_id: UUID
    status: str
    error_code: str | None
    usage: dict[str, Any] | None
    pending_interrupts: list[dict[str, Any]] | None
    events: Sequence[tuple[int, Any]]
    """The log's events not written yet, as :func:`append_events` takes them."""
    messages: Sequence[AnswerMessage]
    parent_id: UUID | None
    """The active line's end the first message follows; each later one follows the one before."""
    touch_session: bool
    """Move the thread's activity time (and its line's end to the last message, when there are some)."""
    audit: Sequence[AuditRow] = ()
    """The run's audit log rows (approvals answered, tool calls made): one more statement when any."""


_PG_APPEND = (
    "WITH logged AS (INSERT INTO run_events (run_id, sequence, event)"
    " SELECT $1::uuid, entry.sequence, entry.event::jsonb"
    " FROM unnest($2::integer[], $3::text[]) WITH ORDINALITY AS entry(sequence, event, n) ORDER BY entry.n)"
    " SELECT pg_notify($4, $5)"
)
_SQLITE_APPEND = insert_sql("run_events", ("run_id", "sequence", "event"), ("?", "?", "?"))


async def append_events(connection: AsyncConnection, run_id: UUID, events: Sequence[tuple[int, Any]]) -> None:
    """Add ``(sequence, event)`` pairs (an event: a JSON-able object, or ``msgspec.Raw`` JSON stored
    as it is) to the run's log in one driver call; on PostgreSQL it also notifies
    :data:`RUN_EVENTS_CHANNEL`."""
    if not events:
        return
    (run_value,) = bound(connection.dialect, _RUN_EVENTS, ("run_id",), (run_id,))
    encoded = _encoded(events)
    if connection.dialect.name == "postgresql":
        await execute(
            connection,
            _PG_APPEND,
            (run_value, [seq for seq, _ in events], encoded, RUN_EVENTS_CHANNEL, str(run_id)),
        )
        return
    await execute(
        connection,
        _SQLITE_APPEND,
        [(run_value, seq, text) for (seq, _), text in zip(events, encoded, strict=True)],
    )


def _encoded(events: Sequence[tuple[int, Any]]) -> list[str]:
    encode = msgspec.json.encode
    return [encode(event).decode() for _, event in events]


def _pg_close() -> str:
    """The closing statement; its parameters are in :func:`write_closing_rows`'s order."""
    marks = iter(f"${n}" for n in range(1, 100))
    run = next(marks)
    outcome = {name: next(marks) for name in _OUTCOME_COLUMNS}
    sets = ", ".join(
        f"{name} = {mark}::{'text::' if name in _JSON else ''}{pg_type(_RUNS, name)}"
        for name, mark in outcome.items()
    )
    now = f"{outcome['updated_at']}::{pg_type(_RUNS, 'updated_at')}"  # the thread's and messages' times too
    sequences, events, session, touch, leaf, channel, payload = (next(marks) for _ in range(7))
    arrays = ", ".join(
        f"{next(marks)}::{'text' if name in _JSON else pg_type(_MESSAGES, name)}[]"
        for name in _MESSAGE_COLUMNS
    )
    uuid = pg_type(_SESSIONS, "id")
    return (
        f"WITH finished AS (UPDATE runs SET {sets} WHERE id = {run}::{uuid} AND status = 'running'"  # noqa: S608
        " RETURNING id), "
        "logged AS (INSERT INTO run_events (run_id, sequence, event)"
        " SELECT finished.id, entry.sequence, entry.event::jsonb FROM finished,"
        f" unnest({sequences}::integer[], {events}::text[]) WITH ORDINALITY AS entry(sequence, event, n)"
        " ORDER BY entry.n), "
        "start AS (SELECT coalesce(max(position) + 1, 0) AS position FROM messages"
        f" WHERE session_id = {session}::{uuid}), "
        "written AS (INSERT INTO messages (id, session_id, external_id, role, content, parts, metadata,"
        " run_id, position, parent_id, created_at, updated_at)"
        f" SELECT m.id, {session}::{uuid}, m.external_id, m.role, m.content, m.parts::jsonb,"
        f" m.metadata::jsonb, finished.id, start.position + m.n - 1, m.parent_id, {now}, {now}"
        f" FROM finished, start, unnest({arrays}) WITH ORDINALITY AS m({', '.join(_MESSAGE_COLUMNS)}, n)), "
        f"moved AS (UPDATE sessions SET last_activity_at = {now},"
        f" active_leaf_id = coalesce({leaf}::{uuid}, sessions.active_leaf_id), updated_at = {now}"
        f" FROM finished WHERE sessions.id = {session}::{uuid} AND {touch}::boolean) "
        f"SELECT count(*), pg_notify({channel}::text, {payload}::text) FROM finished"
    )


_PG_CLOSE = _pg_close()
_SQLITE_FINISH = (
    f"UPDATE runs SET {', '.join(f'{name} = ?' for name in _OUTCOME_COLUMNS)}"  # noqa: S608
    " WHERE id = ? AND status = 'running'"
)
_SQLITE_NEXT_POSITION = "SELECT max(position) FROM messages WHERE session_id = ?"
_SQLITE_MESSAGES = insert_sql(
    "messages",
    (*_MESSAGE_COLUMNS, "session_id", "run_id", "position", "created_at", "updated_at"),
    ["?"] * (len(_MESSAGE_COLUMNS) + 5),
)
_AUDIT_COLUMNS = (
    "at",
    "actor",
    "action",
    "target",
    "status",
    "trace_id",
    "detail",
    "actor_key_id",
    "request_id",
)
_SQLITE_AUDIT = insert_sql("audit_log", _AUDIT_COLUMNS, ["?"] * len(_AUDIT_COLUMNS))
_PG_AUDIT = insert_sql(
    "audit_log",
    _AUDIT_COLUMNS,
    [
        f"${n}::{'text::' if name == 'detail' else ''}{pg_type(_AUDIT, name)}"
        for n, name in enumerate(_AUDIT_COLUMNS, start=1)
    ],
)
_SPEND = cast("Table", SpendEntry.__table__)
_PG_RELEASE = f"DELETE FROM spend_ledger WHERE id = $1::{pg_type(_SPEND, 'id')}"  # noqa: S608 (a column type, not input)
_SQLITE_RELEASE = "DELETE FROM spend_ledger WHERE id = ?"
"""The run's budget hold ends with it (ADR 0085): its cost is on the run row from now on."""
_SQLITE_TOUCH = (
    "UPDATE sessions SET last_activity_at = ?, active_leaf_id = coalesce(?, active_leaf_id), updated_at = ?"
    " WHERE id = ?"
)


async def write_closing_rows(connection: AsyncConnection, rows: ClosingRows) -> bool:
    """Write ``rows`` in the connection's transaction; ``False``, with nothing written, when the run
    was no longer running."""
    dialect = connection.dialect
    now = utcnow()
    outcome = bound(
        dialect,
        _RUNS,
        _OUTCOME_COLUMNS,
        (rows.status, rows.error_code, rows.usage, rows.pending_interrupts, now, now, now),
    )
    messages: list[list[Any]] = []
    parent = rows.parent_id
    for message in rows.messages:
        pk = uuid7()
        values = (pk, message.external_id, message.role, message.content, message.parts, message.meta, parent)
        messages.append(bound(dialect, _MESSAGES, _MESSAGE_COLUMNS, values))
        parent = pk
    leaf = parent if rows.messages else None
    run_pk, session_pk, leaf_pk, stamp = bound(
        dialect,
        _MESSAGES,
        ("run_id", "session_id", "parent_id", "created_at"),
        (rows.run_id, rows.session_id, leaf, now),
    )
    if dialect.name == "postgresql":
        arrays = [list(column) for column in zip(*messages, strict=True)] or [[] for _ in _MESSAGE_COLUMNS]
        sequences = [seq for seq, _ in rows.events]
        log = (sequences, _encoded(rows.events))
        parameters = (run_pk, *outcome, *log, session_pk, rows.touch_session, leaf_pk)
        result = await execute(
            connection, _PG_CLOSE, (*parameters, RUN_EVENTS_CHANNEL, str(rows.run_id), *arrays)
        )
        closed = bool(result.scalar())
        await execute(connection, _PG_RELEASE, (bound(dialect, _SPEND, ("id",), (rows.run_id,))[0],))
        if closed:
            await _append_audit(connection, rows.audit)
        return closed
    await execute(connection, _SQLITE_RELEASE, (bound(dialect, _SPEND, ("id",), (rows.run_id,))[0],))
    if not (await execute(connection, _SQLITE_FINISH, (*outcome, run_pk))).rowcount:
        return False
    await append_events(connection, rows.run_id, rows.events)
    if messages:
        last = (await execute(connection, _SQLITE_NEXT_POSITION, (session_pk,))).scalar()
        start = 0 if last is None else int(last) + 1
        await execute(
            connection,
            _SQLITE_MESSAGES,
            [(*row, session_pk, run_pk, start + i, stamp, stamp) for i, row in enumerate(messages)],
        )
    if rows.touch_session:
        await execute(connection, _SQLITE_TOUCH, (stamp, leaf_pk, stamp, session_pk))
    await _append_audit(connection, rows.audit)
    return True


async def _append_audit(connection: AsyncConnection, audit: Sequence[AuditRow]) -> None:
    """The run's audit rows in one ``executemany``, in the closing transaction."""
    if not audit:
        return
    dialect = connection.dialect
    values = [
        tuple(
            bound(
                dialect,
                _AUDIT,
                _AUDIT_COLUMNS,
                (
                    row.at,
                    row.actor[:200],
                    row.action[:120],
                    row.target[:400],
                    row.status,
                    row.trace_id,
                    row.detail,
                    row.key_id,
                    row.request_id,
                ),
            )
        )
        for row in audit
    ]
    await execute(connection, _PG_AUDIT if dialect.name == "postgresql" else _SQLITE_AUDIT, values)
