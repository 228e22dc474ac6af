"""Runs and their event logs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from typing import Any
from uuid import UUID

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import bindparam, func, select, update
from uuid_utils.compat import uuid7

from iris.app.persistence.models import ModelRow, Run, RunEvent
from iris.app.persistence.repositories._common import first_or_none, utcnow
from iris.app.persistence.repositories.closing_rows import ClosingRows, append_events, write_closing_rows

# Statements built once (why: see _common).
_RUN_ID_TAKEN = select(Run.id).where(Run.external_id == bindparam("external_id")).limit(1)
_LATEST_RUN = (
    select(Run).where(Run.session_id == bindparam("session_id")).order_by(Run.started_at.desc()).limit(1)
)


class RunRepository(SQLAlchemyAsyncRepository[Run]):
    """Runs, found by the client's ``runId``."""

    model_type = Run

    async def get_by_external_id(self, external_id: str) -> Run | None:
        """The run the client named, or ``None``."""
        return await self.get_one_or_none(external_id=external_id)

    def running_row(
        self,
        *,
        external_id: str,
        session_id: UUID,
        owner_id: str,
        model: ModelRow,
        agent_version_id: UUID,
        key_id: str | None = None,
        run_pk: UUID | None = None,
    ) -> Run:
        """A new ``running`` run's row, its primary key assigned, unsaved and not added: the intake's
        commit writes it (where a concurrent request that took the same ``runId`` first fails it)."""
        now = utcnow()
        return Run(
            id=run_pk or uuid7(),
            external_id=external_id,
            session_id=session_id,
            owner_id=owner_id,
            status="running",
            model_id=model.id,
            model_ref=model.ref,
            agent_version_id=agent_version_id,
            key_id=key_id,
            started_at=now,
            heartbeat_at=now,
        )

    async def external_ids(self, run_ids: Collection[UUID]) -> dict[UUID, str]:
        """The client ``runId`` of each of these runs."""
        if not run_ids:
            return {}
        stmt = select(Run.id, Run.external_id).where(Run.id.in_(list(run_ids)))
        return {row.id: row.external_id for row in (await self.session.execute(stmt)).all()}

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

    async def close(self, rows: ClosingRows) -> bool:
        """Record how a running run ended, with its log's last events and its answer's messages, in
        this transaction and without the ORM (:mod:`~iris.app.persistence.repositories.closing_rows`: one
        statement on PostgreSQL); ``False``, with nothing written, if it was no longer running
        (declared lost)."""
        return await write_closing_rows(await self.session.connection(), rows)

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


class RunEventRepository(SQLAlchemyAsyncRepository[RunEvent]):
    """A run's event log, appended in batches and replayed by sequence."""

    model_type = RunEvent

    async def append_batch(self, run_id: UUID, events: Sequence[tuple[int, Any]]) -> None:
        """Insert ``(sequence, event)`` pairs in one driver call
        (:func:`~iris.app.persistence.repositories.closing_rows.append_events`)."""
        await append_events(await self.session.connection(), run_id, events)

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
