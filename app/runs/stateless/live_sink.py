"""The event sink of stateless chat (``POST /api/llm/chat``): a run's events streamed and kept in memory,
nothing stored (the run engine's :class:`~iris.app.runs.store.event_store.EventSink`)."""

from __future__ import annotations

import asyncio

from iris.app.agui.events import (
    OPENING_EVENTS,
    TERMINAL_EVENTS,
    AgUiEvent,
    RunError,
    TextMessageEnd,
    encode_event,
)
from iris.app.persistence.repositories import AuditRow
from iris.app.runs.content.outputs import WORKER_OUTPUT_KEY, WorkerAgentOutput
from iris.app.runs.store.event_store import BATCH_EVENTS, validated
from iris.app.runs.store.live import RunChannel


class LiveOnly:
    """A sink for stateless chat (``POST /api/llm/chat``): events are numbered and streamed, and kept in
    memory for a non-streaming answer; nothing is written anywhere."""

    def __init__(self, channel: RunChannel) -> None:
        self.channel = channel
        self.events: list[AgUiEvent] = []
        self._finished = False

    @property
    def finished(self) -> bool:
        return self._finished

    async def emit(self, event: AgUiEvent) -> None:
        if self._finished:
            raise RuntimeError("the run already ended")
        if isinstance(event, TextMessageEnd) and event.metadata and WORKER_OUTPUT_KEY in event.metadata:
            validated(event.metadata[WORKER_OUTPUT_KEY], WorkerAgentOutput)
        self.events.append(event)
        turn = self.channel.publish(
            (len(self.events), encode_event(event)), urgent=not isinstance(event, OPENING_EVENTS)
        )
        if isinstance(event, TERMINAL_EVENTS):
            self._finished = True
            self.channel.close()
        elif turn or len(self.events) % BATCH_EVENTS == 0:
            await asyncio.sleep(0)  # a waiting stream sends it now; a long burst lets the loop serve

    def commit_intake(self) -> None:
        pass  # nothing is stored

    async def intake_settled(self) -> None:
        pass

    def audit(self, row: AuditRow) -> None:
        pass  # nothing is stored

    def abandon(self, event: RunError) -> None:
        self.events.append(event)
        self._finished = True
        self.channel.publish((len(self.events), encode_event(event)))
        self.channel.close()
