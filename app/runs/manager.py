"""Runs execute as tasks owned by the app, not by the request that started them.

A client that disconnects only stops *listening*: the run goes on to its terminal event and its
results land in the database. At shutdown, running runs get a grace period, then are stopped with
a ``RUN_ERROR`` (``run_aborted``) recorded.
"""

from __future__ import annotations

import asyncio
import logging

from app.runs.event_store import EventStore
from app.runs.intake import RunPlan
from app.runs.live import RunChannel, Subscription
from app.runs.orchestrator import Orchestrator, RunServices

log = logging.getLogger("iris.runs")

SHUTDOWN_GRACE_SECONDS = 10.0


class RunManager:
    """Starts runs and tracks the ones this process is executing."""

    def __init__(self, services: RunServices) -> None:
        self.services = services
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._channels: dict[str, RunChannel] = {}

    def start(self, plan: RunPlan) -> tuple[RunChannel, Subscription]:
        """Start executing ``plan``; returns its channel, already subscribed (no event can be missed)."""
        channel = RunChannel()
        subscription = channel.subscribe()
        store = EventStore(
            self.services.alchemy, run_pk=plan.run_pk, session_pk=plan.session_pk, channel=channel
        )
        task = asyncio.create_task(Orchestrator(plan, self.services, store).run(), name=f"run {plan.run_id}")
        self._tasks[plan.run_id] = task
        self._channels[plan.run_id] = channel
        task.add_done_callback(lambda _: self._forget(plan.run_id))
        return channel, subscription

    def running(self) -> int:
        """How many runs this process is executing."""
        return len(self._tasks)

    def _forget(self, run_id: str) -> None:
        self._tasks.pop(run_id, None)
        self._channels.pop(run_id, None)

    async def shutdown(self, grace_seconds: float = SHUTDOWN_GRACE_SECONDS) -> None:
        """Let running runs finish for a while, then stop the rest."""
        tasks = list(self._tasks.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace_seconds)
        for task in pending:
            task.cancel()
        if pending:
            log.warning("stopped %d run(s) still going at shutdown", len(pending))
            await asyncio.gather(*pending, return_exceptions=True)
