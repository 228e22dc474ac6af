"""In-process fan-out of a running run's frames to the streams that follow it, and the event-log source
that lets any process follow a run another process is executing.

The run never waits for a client (it keeps going when the client leaves), and no follower costs memory
of its own: a run's frames are kept once, in its :class:`RunChannel` (a re-attaching stream in this
process replays from there), and each :class:`Subscription` is a position in them. A follower is
handed its frames in pieces of at most :data:`PIECE_BYTES` (one socket write each). One that falls
more than :class:`FollowerLimits` behind while its connection is still taking the last piece (a slow
or stalled reader, not one that merely waits for the loop during a burst) is let go: its stream ends
with an ``iris/streamDropped`` ``CUSTOM`` event naming the last event it was given, and it re-attaches
with ``Last-Event-ID`` to get the rest, each event once.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import msgspec
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from iris.app.agui.events import Custom, encode_event
from iris.app.agui.sse import PIECE_BYTES, Frame
from iris.app.persistence.availability import cause, database_unavailable
from iris.app.persistence.db import session_scope
from iris.app.persistence.repositories import RunEventRepository, RunRepository
from iris.app.runs.store.notices import LogWakeups

log = logging.getLogger("iris.runs")

DROPPED_EVENT = "iris/streamDropped"
"""The ``CUSTOM`` event ending a follower's stream before its run ended; ``value``: ``reason``
(``slow_reader``, ``database_unavailable``) and ``lastEventId`` (re-attach with it)."""


def is_terminal(event: dict[str, Any]) -> bool:
    """Whether a logged event ends its run."""
    return event.get("type") in ("RUN_FINISHED", "RUN_ERROR")


def dropped_notice(reason: str, last_event_id: int) -> bytes:
    """The frame that ends a dropped follower's stream: a ``CUSTOM`` event without an ``id:`` (it is not
    one of the run's events, so ``Last-Event-ID`` stays the last real one)."""
    event = Custom(name=DROPPED_EVENT, value={"reason": reason, "lastEventId": last_event_id})
    return b"data: %s\n\n" % encode_event(event)


@dataclass(frozen=True, slots=True)
class FollowerLimits:
    """How far a follower may fall behind the run while its connection is still taking the last piece."""

    frames: int = 8192
    bytes: int = 1 << 20


class Subscription:
    """One follower: its position in its channel's frames, handed out in bounded pieces (see
    :class:`iris.app.agui.sse.FrameSource`)."""

    def __init__(self, frames: list[Frame], ends: list[int], position: int, after: int = 0) -> None:
        self._frames = frames  # the channel's own lists (append-only), not a copy
        self._ends = ends
        self._next = position
        self._after = after
        """Frames numbered up to here are never handed out (a follower that asked past the live end)."""
        self._ready = asyncio.Event()
        self._writing = False  # between handing out a piece and asking for the next one
        self._ended = False
        self.parting: bytes | None = None
        """The frame that ends the stream when this follower was let go (see the module docstring)."""

    @property
    def handed_out(self) -> int:
        """The sequence number of the last frame handed out (0: none yet)."""
        return self._frames[self._next - 1][0] if self._next else 0

    def lag(self) -> tuple[int, int]:
        """Frames and bytes published but not yet handed out."""
        behind = len(self._frames) - self._next
        if behind <= 0:
            return 0, 0
        before = self._ends[self._next - 1] if self._next else 0
        return behind, self._ends[-1] - before

    def notify(self) -> bool:
        """More frames are there; whether that woke a stream waiting for them."""
        woke = not self._ready.is_set()
        self._ready.set()
        return woke

    def over(self, limits: FollowerLimits) -> bool:
        """Whether this follower is too far behind: still writing its last piece, and beyond ``limits``.
        One that is not writing only waits for the loop (the run is in a burst), not for its client."""
        if not self._writing:
            return False
        frames, size = self.lag()
        return frames > limits.frames or size > limits.bytes

    def drop(self, reason: str) -> None:
        """Let this follower go: nothing more is handed out, its stream ends with the notice."""
        self.parting = dropped_notice(reason, self.handed_out)
        self.release()

    def release(self) -> None:
        """Hold nothing more of the run (the follower left, or was let go)."""
        self._end(keep_rest=False)

    def end(self) -> None:
        """The run ended: hand out what is left, then stop. The rest is copied (references to the same
        frames) so the channel's own list can go when the run does."""
        self._end(keep_rest=True)

    def _end(self, *, keep_rest: bool) -> None:
        rest = self._frames[self._next :] if keep_rest else []
        self._frames, self._ends = rest, _ends_of(rest)
        self._next = 0
        self._ended = True
        self._ready.set()

    @property
    def exhausted(self) -> bool:
        return self._ended and self._next >= len(self._frames)

    async def next_batch(self, wait_seconds: float) -> list[Frame] | None:
        self._writing = False
        self._skip_asked_past()
        if self._next >= len(self._frames) and not self._ended:
            try:
                async with asyncio.timeout(wait_seconds):  # no helper task: a push wakes this one directly
                    while True:
                        await self._ready.wait()
                        self._ready.clear()
                        self._skip_asked_past()
                        if self._next < len(self._frames) or self._ended:
                            break
            except TimeoutError:
                return []
        self._ready.clear()
        if self._next >= len(self._frames):
            return None  # ended, and everything was handed out
        start = self._next
        limit = (self._ends[start - 1] if start else 0) + PIECE_BYTES
        stop = start + 1
        while stop < len(self._frames) and self._ends[stop] <= limit:
            stop += 1
        self._next = stop
        self._writing = True
        return self._frames[start:stop]

    def _skip_asked_past(self) -> None:
        while self._next < len(self._frames) and self._frames[self._next][0] <= self._after:
            self._next += 1


def _ends_of(frames: list[Frame]) -> list[int]:
    ends: list[int] = []
    total = 0
    for _, payload in frames:
        total += len(payload)
        ends.append(total)
    return ends


SEND_TURNS = 2
"""How many times a run yields to its waiting streams as soon as it publishes (see
:meth:`RunChannel.publish`): ``RUN_STARTED``, then the first content. Every write wakes the client (a
few tens of microseconds of the server's CPU each on loopback), and a burst's later frames lose nothing
by going out together a moment later."""


class RunChannel:
    """One run's frames: all of them kept while the run is live here (a re-attaching stream in this
    process replays from memory), and every follower told as they come. ``limits``: how far a follower
    may fall behind (see the module docstring); ``None`` for a run whose one follower is its own request
    and cannot re-attach (stateless chat)."""

    def __init__(self, limits: FollowerLimits | None = None) -> None:
        self._subscribers: list[Subscription] = []
        self._frames: list[Frame] = []
        self._ends: list[int] = []  # running total of payload bytes after each frame
        self._limits = limits
        self.closed = False
        self._turns = 0
        self._woke = False

    def subscribe(self, after: int = 0) -> Subscription:
        """A subscription that first gets the frames numbered after ``after``, then the live ones."""
        position = bisect.bisect_right(self._frames, after, key=lambda frame: frame[0])
        subscription = Subscription(self._frames, self._ends, position, after)
        if self.closed:
            subscription.end()
        else:
            self._subscribers.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """A follower left: it holds nothing of the channel any more."""
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)
        subscription.release()

    def publish(self, frame: Frame, *, urgent: bool = True) -> bool:
        """Keep a frame and tell every follower. Returns whether the producer should yield to the event
        loop now, so that a stream waiting for frames sends this one at once: true for a run's first
        :data:`SEND_TURNS` ``urgent`` frames (``RUN_STARTED`` and its first token, which a vendor's burst
        of many chunks in one read would otherwise hold back until the whole burst is translated). A
        frame that is not urgent (a message's start, which its first content always follows at once)
        goes out with the next one. Later frames go out together, in one write per turn of the loop. A
        follower too far behind is let go here."""
        self._frames.append(frame)
        self._ends.append((self._ends[-1] if self._ends else 0) + len(frame[1]))
        woke = False
        for subscription in self._subscribers:
            woke = subscription.notify() or woke
        if self._limits is not None:
            for subscription in tuple(self._subscribers):  # a copy: the loop removes from the list
                if subscription.over(self._limits):
                    self._subscribers.remove(subscription)
                    subscription.drop("slow_reader")
        self._woke = self._woke or woke  # a frame that is not urgent may have been the one to wake it
        if not urgent or not self._woke or self._turns >= SEND_TURNS:
            return False
        self._woke = False
        self._turns += 1
        return True

    def close(self) -> None:
        """The run ended: each follower gets the rest of its frames, unless it is too far behind."""
        self.closed = True
        for subscription in self._subscribers:
            if self._limits is not None and subscription.over(self._limits):
                subscription.drop("slow_reader")
            else:
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
        self.parting: bytes | None = None
        """Ends the stream when the log could not be read (the database went away): re-attach later."""

    def close(self) -> None:
        self._wakeups.unwatch(self._run_pk, self._woken)

    @property
    def exhausted(self) -> bool:
        return self._done

    async def next_batch(self, wait_seconds: float) -> list[Frame] | None:
        if self._done:
            return None
        deadline = time.monotonic() + wait_seconds
        while True:
            self._woken.clear()  # before the read: a notice for events it misses wakes the next one
            try:
                async with session_scope(self._alchemy) as db:
                    rows = await RunEventRepository(session=db).list_after(self._run_pk, self._last)
                    if not rows and await RunRepository(session=db).is_over(self._run_pk):
                        # ended: whatever came after the first read is logged by now (a follower at or
                        # past the run's last event gets nothing more, so its stream ends here)
                        rows = await RunEventRepository(session=db).list_after(self._run_pk, self._last)
                        if not rows:
                            self._done = True
                            return None
            except Exception as exc:
                if not database_unavailable(exc):
                    raise
                log.warning("following run %s: database_unavailable: %s", self._run_pk, cause(exc))
                self._done = True
                self.parting = dropped_notice("database_unavailable", self._last)
                return None
            if rows:
                self._last = max(self._last, rows[-1].sequence)
                self._done = any(is_terminal(row.event) for row in rows)
                return [(row.sequence, msgspec.json.encode(row.event)) for row in rows]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            await self._wakeups.wait(self._woken, remaining)
