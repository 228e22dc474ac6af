"""Runs execute as tasks owned by the app, not by the request that started them.

A client that disconnects only stops *listening*: the run goes on to its terminal event and its
results land in the database. The manager also keeps runs honest across processes:

- every ``heartbeat_seconds`` it marks this process's runs alive and picks up cancel requests made
  through any process (``runs.cancel_requested_at``);
- at start-up and on the same beat it fails runs whose heartbeat stopped more than ``stale_seconds``
  ago — their process died — and appends the ``RUN_ERROR`` that ends their event log, so a
  re-attaching client always reaches a terminal event; its id is above any the dead process may have
  streamed without logging (:data:`~iris.app.runs.store.event_store.MAX_UNLOGGED`), so ids never go backwards;
- a run that ended while the database was unavailable (its stream got ``RUN_ERROR``
  ``database_unavailable``, unrecorded) stays alive in the heartbeat, and on each beat its ending is
  written again until it lands, so the log says what the client saw;
- at shutdown, running runs get a grace period, then end with ``RUN_ERROR`` ``run_aborted``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Callable
from uuid import UUID

import msgspec

from iris.app.agui.events import RunError, now_ms
from iris.app.errors import Conflict
from iris.app.persistence.availability import cause, database_unavailable
from iris.app.persistence.db import session_scope
from iris.app.persistence.repositories import RunEventRepository, RunRepository, SpendRepository, utcnow
from iris.app.runs.engine.orchestrator import Orchestrator
from iris.app.runs.engine.services import RunServices
from iris.app.runs.intake.plan import RunPlan
from iris.app.runs.store.event_store import MAX_UNLOGGED, EventStore, RunLost
from iris.app.runs.store.live import FollowerLimits, RunChannel, Subscription
from iris.app.runs.store.notices import LogWakeups

log = logging.getLogger("iris.runs")

SHUTDOWN_GRACE_SECONDS = 10.0
FOLLOW_POLL_SECONDS = 0.1
"""How often a follower re-reads the log of a run executing elsewhere when no notice can wake it."""
PRUNE_HOLDS_SECONDS = 600.0
"""How often a process forgets the budget holds whose lease ran out (they already count nothing)."""
LOST_MESSAGE = "The run was lost: the server running it stopped before it finished."


class RunManager:
    """Starts runs, tracks the ones this process is executing, and sweeps up lost ones."""

    def __init__(
        self,
        services: RunServices,
        *,
        heartbeat_seconds: float,
        stale_seconds: float,
        wakeups: LogWakeups | None = None,
        follower_limits: FollowerLimits | None = None,
    ) -> None:
        self.services = services
        self._follower_limits = follower_limits or FollowerLimits()
        self.wakeups = wakeups or LogWakeups(FOLLOW_POLL_SECONDS)
        """How followers of runs executing in other processes learn that the log grew."""
        self._heartbeat = heartbeat_seconds
        self._stale = dt.timedelta(seconds=stale_seconds)
        self._holds_pruned_at = float("-inf")
        self._runs: dict[str, tuple[UUID, asyncio.Task[None], RunChannel, Orchestrator]] = {}
        self._threads: set[tuple[str, str]] = set()
        """``(owner, threadId)`` of the runs executing here: a second run on one of them is refused even
        before the first one's intake is committed (other processes see that commit)."""
        self._keeper: asyncio.Task[None] | None = None
        self._unrecorded: dict[UUID, EventStore] = {}

    async def start_keeping(self) -> None:
        """Listen for log notices; sweep lost runs now, then keep beating and sweeping in the background."""
        await self.wakeups.start()
        await self.sweep_lost()
        self._keeper = asyncio.create_task(self._keep(), name="run keeper")

    def start(
        self, plan: RunPlan, *, intake: Callable[[], asyncio.Future[None]] | None = None
    ) -> tuple[RunChannel, Subscription]:
        """Start executing ``plan`` (``intake``: starts the commit of its intake, see
        :class:`~iris.app.runs.store.event_store.EventStore`); returns its channel, already subscribed (no
        event
        can be missed). Raises 409 ``run_in_progress`` when this process already runs the thread."""
        thread = (plan.owner_id, plan.thread_id)
        if thread in self._threads:
            raise Conflict("A run is already in progress on this thread.", code="run_in_progress")
        channel = RunChannel(self._follower_limits)
        subscription = channel.subscribe()
        store = EventStore(
            self.services.alchemy,
            run_pk=plan.run_pk,
            session_pk=plan.session_pk,
            parent_pk=plan.parent_pk,
            channel=channel,
            batch_seconds=self.wakeups.batch_seconds,
            intake=intake,
        )
        orchestrator = Orchestrator(plan, self.services, store)
        task = asyncio.create_task(orchestrator.run(), name=f"run {plan.run_id}")
        self._runs[plan.run_id] = (plan.run_pk, task, channel, orchestrator)
        self._threads.add(thread)
        task.add_done_callback(lambda _: self._ended(plan.run_id, thread, store))
        return channel, subscription

    def _ended(self, run_id: str, thread: tuple[str, str], store: EventStore) -> None:
        self._threads.discard(thread)
        entry = self._runs.pop(run_id, None)
        if entry is not None and store.unrecorded:
            self._unrecorded[entry[0]] = store

    def runs_thread(self, owner_id: str, thread_id: str) -> bool:
        """Whether this process is executing a run of the thread (its intake may not be committed yet)."""
        return (owner_id, thread_id) in self._threads

    def executing(self, run_id: str, owner_id: str) -> UUID | None:
        """The primary key of ``owner_id``'s run ``run_id`` if this process is executing it, else
        ``None``: such a run can be followed before its intake commit lands."""
        entry = self._runs.get(run_id)
        return entry[0] if entry is not None and entry[3].plan.owner_id == owner_id else None

    async def intake_settled(self, run_id: str) -> None:
        """Wait until the intake of a run this process is executing is committed (or failed); at once
        for any other run (its intake is committed: another process saw it)."""
        entry = self._runs.get(run_id)
        if entry is not None:
            await entry[3].store.intake_settled()

    def channel(self, run_id: str) -> RunChannel | None:
        """The live channel of a run this process is executing."""
        entry = self._runs.get(run_id)
        return entry[2] if entry else None

    def traceparent(self, run_id: str) -> str | None:
        """The W3C ``traceparent`` of a run this process is executing (tracing on), else ``None``."""
        entry = self._runs.get(run_id)
        return entry[3].telemetry.trace_ids.get("traceparent") if entry else None

    def cancel(self, run_id: str) -> bool:
        """Stop a run this process is executing; ``False`` if it runs elsewhere (or not at all)."""
        entry = self._runs.get(run_id)
        if entry is None:
            return False
        entry[3].request_cancel()
        return True

    def running(self) -> int:
        """How many runs this process is executing."""
        return len(self._runs)

    async def sweep_lost(self) -> int:
        """Fail every run whose heartbeat stopped too long ago; returns how many this process failed."""
        cutoff = utcnow() - self._stale
        async with session_scope(self.services.alchemy) as db:
            stale = [run.id for run in await RunRepository(session=db).stale(cutoff)]
            if time.monotonic() - self._holds_pruned_at > PRUNE_HOLDS_SECONDS:
                self._holds_pruned_at = time.monotonic()
                await SpendRepository(session=db).prune_lapsed()  # a dead process's holds (ADR 0085)
        failed = 0
        for run_id in stale:
            async with session_scope(self.services.alchemy) as db:
                if not await RunRepository(session=db).mark_lost(run_id, cutoff):
                    continue  # another process swept it, or it came back to life
                events = RunEventRepository(session=db)
                sequence = await events.last_sequence(run_id) + MAX_UNLOGGED + 1
                error = RunError(message=LOST_MESSAGE, code="run_lost", timestamp=now_ms())
                await events.append_batch(run_id, [(sequence, msgspec.to_builtins(error))])
            failed += 1
        if failed:
            log.warning("marked %d lost run(s) failed", failed)
        return failed

    async def _keep(self) -> None:
        down: str | None = None  # the cause, while the database is unavailable
        while True:
            await asyncio.sleep(self._heartbeat)
            try:
                await self._beat()
                await self.sweep_lost()
            except Exception as exc:
                if not database_unavailable(exc):
                    log.exception("run keeper: heartbeat or sweep failed")
                elif down is None:  # a documented outage: one line when it starts, one when it ends
                    down = cause(exc)
                    log.warning(
                        "run keeper: database_unavailable: %s; retrying every %g s", down, self._heartbeat
                    )
                continue
            if down is not None:
                log.info("run keeper: the database is available again (after %s)", down)
                down = None

    async def _beat(self) -> None:
        local = {pk: run_id for run_id, (pk, *_rest) in self._runs.items()}
        if not local and not self._unrecorded:
            return
        async with session_scope(self.services.alchemy) as db:
            cancelled = await RunRepository(session=db).beat([*local, *self._unrecorded])
        for pk in cancelled:
            if pk in local:
                self.cancel(local[pk])
        await self.record_unrecorded()

    async def record_unrecorded(self) -> None:
        """Write the endings of runs that ended while the database was unavailable (see module doc)."""
        for pk, store in list(self._unrecorded.items()):
            try:
                await store.record_abandoned()
            except RunLost:
                pass  # swept meanwhile: the sweep's ending stands
            except Exception as exc:
                if not database_unavailable(exc):  # an outage is the keeper's to report, once
                    log.exception("run %s: its ending could not be recorded; retrying on the next beat", pk)
                continue
            self._unrecorded.pop(pk, None)

    async def shutdown(self, grace_seconds: float = SHUTDOWN_GRACE_SECONDS) -> None:
        """Stop the keeper; let running runs finish for a while, then stop the rest."""
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        await self.wakeups.aclose()
        tasks = [task for _, task, _, _ in self._runs.values()]
        if not tasks:
            await self.record_unrecorded()
            return
        _, pending = await asyncio.wait(tasks, timeout=grace_seconds)
        for task in pending:
            task.cancel()
        if pending:
            log.warning("stopped %d run(s) still going at shutdown", len(pending))
            await asyncio.gather(*pending, return_exceptions=True)
        await self.record_unrecorded()
