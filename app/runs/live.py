"""In-process fan-out of a running run's frames to the streams that follow it.

A subscriber's queue is unbounded on purpose: the run must never wait for a slow client (it keeps
going when the client leaves), and a run's events are bounded by the model's output.
"""

from __future__ import annotations

import asyncio

from app.agui.sse import Frame


class RunChannel:
    """One run's live frames; ``None`` on a queue means the run has ended."""

    def __init__(self) -> None:
        self._queues: list[asyncio.Queue[Frame | None]] = []
        self.closed = False

    def subscribe(self) -> asyncio.Queue[Frame | None]:
        queue: asyncio.Queue[Frame | None] = asyncio.Queue()
        if self.closed:
            queue.put_nowait(None)
        else:
            self._queues.append(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Frame | None]) -> None:
        if queue in self._queues:
            self._queues.remove(queue)

    def publish(self, frame: Frame) -> None:
        for queue in self._queues:
            queue.put_nowait(frame)

    def close(self) -> None:
        self.closed = True
        for queue in self._queues:
            queue.put_nowait(None)
        self._queues.clear()
