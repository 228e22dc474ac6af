"""A stateless run as a stream of AG-UI events in memory, for surfaces that speak another wire format
(the OpenAI gateway, ``iris.app.api.openai``): the same orchestrator as ``/api/llm/chat``, nothing stored,
and the run stops when the consumer does (a client that closes its stream cancels the vendor call).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from iris.app.agui.events import OPENING_EVENTS, TERMINAL_EVENTS, AgUiEvent, RunError
from iris.app.persistence.repositories import AuditRow
from iris.app.runs.engine.orchestrator import Orchestrator
from iris.app.runs.engine.services import RunServices
from iris.app.runs.intake.plan import RunPlan
from iris.app.runs.stateless.settle import run_settled
from iris.app.runs.store.event_store import BATCH_EVENTS
from iris.app.runs.store.live import SEND_TURNS


class _Queued:
    """An event sink handing each event to the consumer as it is emitted; nothing is written.

    Like a run's channel (``iris.app.runs.store.live.RunChannel.publish``), it lets the consumer have the
    first
    content at once and keeps the rest of a vendor's burst for it to take together, in one write."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[AgUiEvent] = asyncio.Queue()
        self._finished = False
        self._turns = 0

    @property
    def finished(self) -> bool:
        return self._finished

    async def emit(self, event: AgUiEvent) -> None:
        if self._finished:
            raise RuntimeError("the run already ended")
        self._finished = isinstance(event, TERMINAL_EVENTS)
        self.queue.put_nowait(event)
        if self._turns < SEND_TURNS and not isinstance(event, OPENING_EVENTS):
            self._turns += 1
            await asyncio.sleep(0)  # a waiting consumer sends it now
        elif self.queue.qsize() % BATCH_EVENTS == 0:
            await asyncio.sleep(0)  # a long burst lets the loop serve (as the event store does)

    def abandon(self, event: RunError) -> None:
        self._finished = True
        self.queue.put_nowait(event)

    def commit_intake(self) -> None:
        pass  # nothing is stored

    async def intake_settled(self) -> None:
        pass

    def audit(self, row: AuditRow) -> None:
        pass  # nothing is stored


class GatewayRun:
    """One stateless run: its events (:meth:`events`) and the model it is on (:attr:`model_ref`)."""

    def __init__(self, plan: RunPlan, services: RunServices) -> None:
        self._sink = _Queued()
        self._orchestrator = Orchestrator(plan, services, self._sink)
        self._services = services

    @property
    def model_ref(self) -> str:
        """The model the run is on now (``provider/modelId``). Once an event of the answer has been
        emitted this is the model that answers: a run moves to a fallback only before any."""
        return self._orchestrator.plan.model_ref

    def queued(self) -> bool:
        """Whether more events are waiting, to be taken without waiting (the consumer's batches)."""
        return not self._sink.queue.empty()

    async def events(self) -> AsyncIterator[AgUiEvent]:
        """The run's events up to and including its terminal one; closing the iterator early cancels
        the run."""
        task = asyncio.create_task(run_settled(self._orchestrator, self._services))
        try:
            while True:
                event = await self._sink.queue.get()
                yield event
                if isinstance(event, TERMINAL_EVENTS):
                    return
        finally:
            if not task.done():
                # Not awaited: a consumer closed by cancellation would cut the run's own clean-up short
                # (the vendor's connection is then left open). Kept referenced until it has ended.
                task.cancel()
                _ENDING.add(task)
                task.add_done_callback(_ENDING.discard)


_ENDING: set[asyncio.Task[None]] = set()
