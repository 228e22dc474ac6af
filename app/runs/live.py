"""In-process fan-out of a running run's frames to the streams that follow it.

A subscriber's buffer is unbounded on purpose: the run must never wait for a slow client (it keeps
going when the client leaves), and a run's events are bounded by the model's output.
"""

from __future__ import annotations

import asyncio
from collections import deque

from app.agui.sse import Frame


class Subscription:
    """One follower's frames, handed out in batches (see :class:`app.agui.sse.FrameSource`)."""

    def __init__(self) -> None:
        self._frames: deque[Frame] = deque()
        self._ready = asyncio.Event()
        self._ended = False

    def push(self, frame: Frame) -> None:
        self._frames.append(frame)
        self._ready.set()

    def end(self) -> None:
        self._ended = True
        self._ready.set()

    async def next_batch(self, wait_seconds: float) -> list[Frame] | None:
        if not self._frames and not self._ended:
            try:
                await asyncio.wait_for(self._ready.wait(), wait_seconds)
            except TimeoutError:
                return []
        self._ready.clear()
        if not self._frames:
            return None  # ended, and everything was handed out
        batch = list(self._frames)
        self._frames.clear()
        return batch


class RunChannel:
    """One run's live frames."""

    def __init__(self) -> None:
        self._subscribers: list[Subscription] = []
        self.closed = False

    def subscribe(self) -> Subscription:
        subscription = Subscription()
        if self.closed:
            subscription.end()
        else:
            self._subscribers.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)

    def publish(self, frame: Frame) -> None:
        for subscription in self._subscribers:
            subscription.push(frame)

    def close(self) -> None:
        self.closed = True
        for subscription in self._subscribers:
            subscription.end()
        self._subscribers.clear()
