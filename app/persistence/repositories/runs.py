"""Runs and their event logs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, cast
from uuid import UUID

import msgspec
from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import Table, bindparam, func, select, update
from uuid_utils.compat import uuid7

from app.persistence.models import ModelRow, Run, RunEvent
from app.persistence.repositories._common import first_or_none, utcnow

# Statements built once (why: see _common).
_RUN_ID_TAKEN = select(Run.id).where(Run.external_id == bindparam("external_id")).limit(1)
_LATEST_RUN = (
    select(Run).where(Run.session_id == bindparam("session_id")).order_by(Run.started_at.desc()).limit(1)
)
_RUNS = cast("Table", Run.__table__)
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


class RunRepository(SQLAlchemyAsyncRepository[Run]):
    """Runs, found by the client's ``runId``."""

    model_type = Run

    async def get_by_external_id(self, external_id: str) -> Run | None:
        """The run the client named, or ``None``."""
        return await self.get_one_or_none(external_id=external_id)

    def running_row(
        self, *, external_id: str, session_id: UUID, owner_id: str, model: ModelRow, agent_version_id: UUID
    ) -> Run:
        """A new ``running`` run's row, its primary key assigned, unsaved and not added: the intake's
        commit writes it (where a concurrent request that took the same ``runId`` first fails it)."""
        now = utcnow()
        return Run(
            id=uuid7(),
            external_id=external_id,
            session_id=session_id,
            owner_id=owner_id,
            status="running",
            model_id=model.id,
            model_ref=model.ref,
            agent_version_id=agent_version_id,
            started_at=now,
            heartbeat_at=now,
        )

    async def external_id_taken(self, external_id: str) -> bool:
        """Whether a run with this client ``runId`` exists (any owner: run ids are global)."""
        return await first_or_none(self.session, _RUN_ID_TAKEN, {"external_id": external_id}) is not None

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

    async def is_over(self, run_id: UUID) -> bool:
        """Whether the run has ended (its terminal event is logged in the same transaction)."""
        status = await self.session.scalar(select(Run.status).where(Run.id == run_id))
        return status is None or status != "running"

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
        return await first_or_none(self.session, _LATEST_RUN, {"session_id": session_id})

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

_RUN_EVENTS = cast("Table", RunEvent.__table__)
_SQLITE_APPEND = "INSERT INTO run_events (run_id, sequence, event) VALUES (?, ?, ?)"
_PG_APPEND = (
    "WITH logged AS (INSERT INTO run_events (run_id, sequence, event)"
    " SELECT $1::uuid, entry.sequence, entry.event::jsonb"
    " FROM unnest($2::integer[], $3::text[]) WITH ORDINALITY AS entry(sequence, event, n) ORDER BY entry.n)"
    " SELECT pg_notify($4, $5)"
)


class RunEventRepository(SQLAlchemyAsyncRepository[RunEvent]):
    """A run's event log, appended in batches and replayed by sequence."""

    model_type = RunEvent

    async def append_batch(self, run_id: UUID, events: Sequence[tuple[int, Any]]) -> None:
        """Insert ``(sequence, event)`` pairs (an event: a JSON-able object, or ``msgspec.Raw`` JSON
        stored as it is) in one driver call.

        Why not a Core ``insert`` with a list of rows: SQLAlchemy then runs every column's bind
        processor on every row in Python, most of a run's closing transaction (issue 26). Here the run
        id is converted once and each event is encoded once, to the JSON text the client was sent;
        SQLite gets the driver's own ``executemany``; PostgreSQL gets one statement that unnests two
        arrays and also notifies :data:`RUN_EVENTS_CHANNEL` (delivered at commit, when followers in
        other processes can read the new events).
        """
        if not events:
            return
        connection = await self.session.connection()
        dialect = connection.dialect
        run_key = _RUN_EVENTS.c.run_id.type.bind_processor(dialect)
        run_value = run_key(run_id) if run_key is not None else run_id
        encode = msgspec.json.encode
        if dialect.name == "postgresql":
            await connection.exec_driver_sql(
                _PG_APPEND,
                (
                    run_value,
                    [seq for seq, _ in events],
                    [encode(event).decode() for _, event in events],
                    RUN_EVENTS_CHANNEL,
                    str(run_id),
                ),
            )
            return
        await connection.exec_driver_sql(
            _SQLITE_APPEND, [(run_value, seq, encode(event).decode()) for seq, event in events]
        )

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
