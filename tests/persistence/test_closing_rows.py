"""A run's closing write, done by the driver (one statement on PostgreSQL), against real databases: it
stores what the ORM's statements stored, in order, and nothing at all for a run declared lost."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid

import msgspec
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.persistence.models import ChatSession, Message, Run
from iris.app.persistence.repositories import (
    AgentRepository,
    AnswerMessage,
    ClosingRows,
    MessageRepository,
    RunEventRepository,
    RunRepository,
    SessionRepository,
    utcnow,
)
from tests.factories import AgentFactory


async def _thread_with_a_run(db: AsyncSession) -> tuple[ChatSession, Run, list[Message]]:
    """A thread with two messages on its line and a running run."""
    agent = await AgentRepository(session=db).add(AgentFactory.build(slug=f"a-{uuid.uuid4().hex[:8]}"))
    sessions = SessionRepository(session=db)
    session = sessions.create_for_owner(str(uuid.uuid4()), "u", agent.id, None)
    db.add(session)
    run = await RunRepository(session=db).add(
        Run(
            external_id=f"run-{uuid.uuid4()}",
            session_id=session.id,
            owner_id="u",
            status="running",
            started_at=utcnow(),
        )
    )
    messages = MessageRepository(session=db)
    first = await messages.append(session.id, role="user", content="one", external_id="u1")
    second = await messages.append(session.id, role="user", content="two 🖼", external_id="u2")
    await db.commit()
    await db.refresh(session)  # its activity time as the appends left it
    return session, run, [first, second]


def _events(count: int) -> list[tuple[int, msgspec.Raw]]:
    return [
        (i, msgspec.Raw(msgspec.json.encode({"type": "TEXT_MESSAGE_CONTENT", "delta": f'é\n"{i}'})))
        for i in range(1, count + 1)
    ]


def _rows(session: ChatSession, run: Run, parent: uuid.UUID | None, **changes: object) -> ClosingRows:
    rows = ClosingRows(
        run_id=run.id,
        session_id=session.id,
        status="interrupted",
        error_code=None,
        usage={"entries": [{"inputTokens": 3}], "billable": {"cost": 0.5}},
        pending_interrupts=[{"id": "i1", "reason": "tool_call_approval"}],
        events=_events(204),
        messages=[
            AnswerMessage(
                role="assistant",
                external_id="a1",
                content="voilà",
                meta={"worker_agent_output": {"answer": "voilà"}},
                parts=[{"type": "tool_call", "id": "c1", "name": "clock", "arguments": "{}"}],
            ),
            AnswerMessage(
                role="tool", external_id="t1", content="12:00", meta={"tool_agent_output": {"n": 1}}
            ),
        ],
        parent_id=parent,
        touch_session=True,
    )
    return dataclasses.replace(rows, **changes)  # type: ignore[arg-type]


async def test_the_closing_write_stores_the_outcome_the_log_and_the_answer_on_the_line(
    db_session: AsyncSession,
) -> None:
    session, run, (first, second) = await _thread_with_a_run(db_session)
    active_before = session.last_activity_at
    rows = _rows(session, run, second.id)
    assert await RunRepository(session=db_session).close(rows)
    await db_session.commit()
    db_session.expunge_all()  # what follows is read from the database

    stored_run = await db_session.get(Run, run.id)
    assert stored_run is not None
    assert (stored_run.status, stored_run.error_code) == ("interrupted", None)
    assert stored_run.usage == rows.usage
    assert stored_run.pending_interrupts == rows.pending_interrupts
    assert stored_run.finished_at is not None
    assert stored_run.finished_at.utcoffset() == dt.timedelta(0)
    assert stored_run.heartbeat_at == stored_run.finished_at
    assert abs(stored_run.finished_at - utcnow()) < dt.timedelta(minutes=1)

    logged = await RunEventRepository(session=db_session).list_after(run.id, 0, limit=500)
    assert [e.sequence for e in logged] == list(range(1, 205))
    assert [e.event for e in logged] == [msgspec.json.decode(raw) for _, raw in rows.events]
    assert [e.id for e in logged] == sorted(e.id for e in logged)  # written in the order they came

    line = await MessageRepository(session=db_session).active_history(session.id)
    assert [(m.content, m.external_id, m.role) for m in line] == [
        ("one", "u1", "user"),
        ("two 🖼", "u2", "user"),
        ("voilà", "a1", "assistant"),
        ("12:00", "t1", "tool"),
    ]
    answer, tool = line[2], line[3]
    assert [m.position for m in line] == [0, 1, 2, 3]
    assert [m.parent_id for m in line] == [None, first.id, second.id, answer.id]
    assert (answer.run_id, tool.run_id) == (run.id, run.id)
    assert answer.parts == rows.messages[0].parts
    assert tool.parts is None
    assert (answer.meta, tool.meta) == (rows.messages[0].meta, rows.messages[1].meta)
    assert answer.created_at.utcoffset() == dt.timedelta(0)
    thread = await db_session.get(ChatSession, session.id)
    assert thread is not None
    assert thread.active_leaf_id == tool.id
    assert thread.last_activity_at > active_before


async def test_a_run_declared_lost_writes_nothing(db_session: AsyncSession) -> None:
    session, run, (_, second) = await _thread_with_a_run(db_session)
    run.status = "failed"  # what the sweeper does to a run whose heartbeat stopped
    run.error_code = "run_lost"
    await db_session.commit()
    assert not await RunRepository(session=db_session).close(_rows(session, run, second.id))
    await db_session.commit()
    db_session.expunge_all()  # what follows is read from the database
    assert await RunEventRepository(session=db_session).last_sequence(run.id) == 0
    count = await db_session.scalar(select(Message.id).where(Message.run_id == run.id).limit(1))
    assert count is None
    thread = await db_session.get(ChatSession, session.id)
    stored_run = await db_session.get(Run, run.id)
    assert thread is not None
    assert stored_run is not None
    assert thread.active_leaf_id == second.id
    assert (stored_run.status, stored_run.error_code, stored_run.usage) == ("failed", "run_lost", None)


async def test_a_failed_run_keeps_its_log_and_leaves_the_thread_as_it_was(db_session: AsyncSession) -> None:
    session, run, (_, second) = await _thread_with_a_run(db_session)
    active_before = session.last_activity_at
    failed = _rows(
        session,
        run,
        second.id,
        status="failed",
        error_code="upstream_unavailable",
        usage=None,
        pending_interrupts=None,
        events=_events(3),
        messages=[],
        touch_session=False,
    )
    assert await RunRepository(session=db_session).close(failed)
    await db_session.commit()
    db_session.expunge_all()  # what follows is read from the database
    stored_run = await db_session.get(Run, run.id)
    thread = await db_session.get(ChatSession, session.id)
    assert stored_run is not None
    assert thread is not None
    assert (stored_run.status, stored_run.error_code) == ("failed", "upstream_unavailable")
    assert stored_run.usage is None
    assert stored_run.pending_interrupts is None
    assert await RunEventRepository(session=db_session).last_sequence(run.id) == 3
    assert (thread.active_leaf_id, thread.last_activity_at) == (second.id, active_before)


async def test_a_run_without_an_answer_moves_the_activity_and_keeps_the_line(
    db_session: AsyncSession,
) -> None:
    session, run, (_, second) = await _thread_with_a_run(db_session)
    active_before = session.last_activity_at
    assert await RunRepository(session=db_session).close(
        _rows(session, run, second.id, status="cancelled", pending_interrupts=None, messages=[])
    )
    await db_session.commit()
    db_session.expunge_all()  # what follows is read from the database
    thread = await db_session.get(ChatSession, session.id)
    assert thread is not None
    assert thread.active_leaf_id == second.id
    assert thread.last_activity_at > active_before


async def test_an_answer_after_a_position_taken_meanwhile_goes_after_it(db_session: AsyncSession) -> None:
    """The positions are read in the closing write itself, not remembered from the intake."""
    session, run, (_, second) = await _thread_with_a_run(db_session)
    edit = await MessageRepository(session=db_session).append(session.id, role="user", content="three")
    await db_session.commit()
    assert await RunRepository(session=db_session).close(_rows(session, run, second.id))
    await db_session.commit()
    rows = (
        await db_session.scalars(select(Message).where(Message.run_id == run.id).order_by(Message.position))
    ).all()
    assert [m.position for m in rows] == [edit.position + 1, edit.position + 2]


@pytest.mark.parametrize("count", [0, 1])
async def test_the_log_append_takes_empty_and_single_batches(db_session: AsyncSession, count: int) -> None:
    session, run, _ = await _thread_with_a_run(db_session)
    assert await RunRepository(session=db_session).close(
        _rows(session, run, None, events=_events(count), messages=[])
    )
    await db_session.commit()
    assert await RunEventRepository(session=db_session).last_sequence(run.id) == count
