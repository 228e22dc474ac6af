"""In-process fan-out of a running run's frames to the streams that follow it, and the event-log source
that lets any process follow a run another process is executing.

A subscriber's buffer is unbounded on purpose: the run must never wait for a slow client (it keeps
going when the client leaves), and a run's events are bounded by the model's output.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any
from uuid import UUID

import msgspec
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from app.agui.sse import Frame
from app.persistence.db import session_scope
from app.persistence.repositories import RunEventRepository
from app.runs.notices import LogWakeups


def is_terminal(event: dict[str, Any]) -> bool:
    """Whether a logged event ends its run."""
    return event.get("type") in ("RUN_FINISHED", "RUN_ERROR")


class Subscription:
    """One follower's frames, handed out in batches (see :class:`app.agui.sse.FrameSource`)."""

    def __init__(self) -> None:
        self._frames: deque[Frame] = deque()
        self._ready = asyncio.Event()
        self._ended = False

    def push(self, frame: Frame) -> bool:
        """Queue a frame; whether that woke a stream waiting for one."""
        woke = not self._ready.is_set()
        self._frames.append(frame)
        self._ready.set()
        return woke

    def end(self) -> None:
        self._ended = True
        self._ready.set()

    async def next_batch(self, wait_seconds: float) -> list[Frame] | None:
        if not self._frames and not self._ended:
            try:
                async with asyncio.timeout(wait_seconds):  # no helper task: a push wakes this one directly
                    await self._ready.wait()
            except TimeoutError:
                return []
        self._ready.clear()
        if not self._frames:
            return None  # ended, and everything was handed out
        batch = list(self._frames)
        self._frames.clear()
        return batch


SEND_TURNS = 4
"""How many times a run yields to its waiting streams as soon as it publishes (see
:meth:`RunChannel.publish`): enough for ``RUN_STARTED`` and the first tokens."""


class RunChannel:
    """One run's frames: all of them kept while the run is live here (a re-attaching stream in this
    process replays from memory), and pushed to every subscriber as they come."""

    def __init__(self) -> None:
        self._subscribers: list[Subscription] = []
        self._frames: list[Frame] = []
        self.closed = False
        self._turns = 0

    def subscribe(self, after: int = 0) -> Subscription:
        """A subscription that first gets the frames numbered after ``after``, then the live ones."""
        subscription = Subscription()
        for frame in self._frames:
            if frame[0] > after:
                subscription.push(frame)
        if self.closed:
            subscription.end()
        else:
            self._subscribers.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)

    def publish(self, frame: Frame) -> bool:
        """Keep and fan out a frame. Returns whether the producer should yield to the event loop now, so
        that a stream waiting for frames sends this one at once: true for a run's first few frames
        (:data:`SEND_TURNS`), its first tokens, which a vendor's burst (many chunks in one read) would
        otherwise hold back until the whole burst is translated. Later frames go out together, in one
        write per turn of the loop."""
        self._frames.append(frame)
        woke = False
        for subscription in self._subscribers:
            woke = subscription.push(frame) or woke
        if not woke or self._turns >= SEND_TURNS:
            return False
        self._turns += 1
        return True

    def close(self) -> None:
        self.closed = True
        for subscription in self._subscribers:
            subscription.end()
        self._subscribers.clear()


class LoggedFrames:
    """Follows a run through its event log (``run_events``): works from any process sharing the
    database. Re-reads the log when ``wakeups`` says it may have grown (a PostgreSQL notice) or a
    re-read is due, until the terminal event has been handed out; call :meth:`close` when done."""

    def __init__(
        self, alchemy: SQLAlchemyAsyncConfig, run_pk: UUID, *, after: int, wakeups: LogWakeups
    ) -> None:
        self._alchemy = alchemy
        self._run_pk = run_pk
        self._last = after
        self._wakeups = wakeups
        self._woken = wakeups.watch(run_pk)  # from now on: no notice is missed between two reads
        self._done = False

    def close(self) -> None:
        self._wakeups.unwatch(self._run_pk, self._woken)

    async def next_batch(self, wait_seconds: float) -> list[Frame] | None:
        if self._done:
            return None
        deadline = time.monotonic() + wait_seconds
        while True:
            self._woken.clear()  # before the read: a notice for events it misses wakes the next one
            async with session_scope(self._alchemy) as db:
                rows = await RunEventRepository(session=db).list_after(self._run_pk, self._last)
            if rows:
                self._last = max(self._last, rows[-1].sequence)
                self._done = any(is_terminal(row.event) for row in rows)
                return [(row.sequence, msgspec.json.encode(row.event)) for row in rows]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            await self._wakeups.wait(self._woken, remaining)
