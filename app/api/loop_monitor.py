"""Event-loop lag monitor: how long the loop thread was unable to run a ready callback.

One task sleeps ``interval`` seconds at a time and measures how late it wakes up. Anything that blocks
the loop thread (a native lock, a long garbage collection, a synchronous call) shows as a stall. It
costs one wake-up per interval; the worst stall is kept, and any stall over ``warn_seconds`` is logged.

A busy machine also makes wake-ups late: the loop thread was ready but waited for a CPU. Where Linux
tells (``/proc/thread-self/schedstat``: time spent waiting on a run queue), that wait is subtracted
into :attr:`LoopMonitor.max_blocked`, the worst time the loop thread was *blocked* — what Iris itself
is answerable for. Tests and ``bench/soak.py`` read both (the latter through ``GET /debug/loop``, which
exists only with ``IRIS_DEBUG``).

With ``stacks`` (``IRIS_DEBUG``), a watchdog thread also looks at the loop thread's stack whenever a
wake-up is more than ``stack_after`` seconds late, and the stack seen during the worst block is kept
(:attr:`LoopMonitor.worst_stack`): what was running when the loop could not, not guessed afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
import traceback

log = logging.getLogger("iris.loop")


class LoopMonitor:
    """Measures the running loop's worst wake-up delay; see the module docstring."""

    def __init__(
        self,
        interval: float = 0.02,
        warn_seconds: float = 0.25,
        *,
        stacks: bool = False,
        stack_after: float = 0.05,
    ) -> None:
        self.interval = interval
        self.warn_seconds = warn_seconds
        self.max_stall = 0.0
        self.max_blocked = 0.0
        self.stalls = 0
        """How many wake-ups were blocked longer than ``warn_seconds``."""
        self.worst_stack: str | None = None
        """With ``stacks``: the loop thread's innermost frames as seen during the worst block."""
        self._stacks = stacks
        self._stack_after = stack_after
        self._due = 0.0
        """When the watching task should next wake (``time.perf_counter()``)."""
        self._seen: str | None = None
        """The stack the watchdog saw while the current wake-up was late."""
        self._task: asyncio.Task[None] | None = None
        self._stopped = threading.Event()
        self._schedstat: int | None = None
        """The loop thread's ``schedstat``, kept open: a ``pread`` is far cheaper than an open and read."""

    def start(self) -> None:
        if self._schedstat is None:
            with contextlib.suppress(OSError):  # the loop thread's own: start runs on the loop
                self._schedstat = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        self._due = time.perf_counter() + self.interval
        self._task = asyncio.get_running_loop().create_task(self._watch(), name="loop monitor")
        if self._stacks:
            self._stopped.clear()
            loop_thread = threading.get_ident()
            threading.Thread(
                target=self._watchdog, args=(loop_thread,), name="loop watchdog", daemon=True
            ).start()

    def reset(self) -> None:
        """Forget the worst block seen so far (a test measures what one request does)."""
        self.max_stall = self.max_blocked = 0.0
        self.stalls = 0
        self.worst_stack = None

    async def stop(self) -> None:
        self._stopped.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._schedstat is not None:
            os.close(self._schedstat)
            self._schedstat = None

    def _late_stack(self) -> str | None:
        """What the watchdog thread saw during this wake-up's lateness (it writes it meanwhile)."""
        return self._seen

    def _watchdog(self, loop_thread: int) -> None:
        """Look at the loop thread's stack while a wake-up is late (the frames of this moment only)."""
        while not self._stopped.wait(self._stack_after / 2):
            due = self._due
            if time.perf_counter() - due > self._stack_after:
                frame = sys._current_frames().get(loop_thread)
                stack = "".join(traceback.format_stack(frame, limit=12)) if frame is not None else None
                if due == self._due:  # still the same late wake-up
                    self._seen = stack

    async def _watch(self) -> None:
        while True:
            before, queued_before = time.perf_counter(), _run_queue_wait(self._schedstat)
            self._due, self._seen = before + self.interval, None
            await asyncio.sleep(self.interval)
            stall = time.perf_counter() - before - self.interval
            blocked = max(0.0, stall - (_run_queue_wait(self._schedstat) - queued_before))
            self.max_stall = max(self.max_stall, stall)
            seen = self._late_stack()
            if blocked > self.max_blocked:
                self.max_blocked = blocked
                if seen is not None:
                    self.worst_stack = seen
            if blocked > self.warn_seconds:
                self.stalls += 1
                log.warning(
                    "event loop blocked for %.0f ms (%.0f ms late)%s",
                    blocked * 1000,
                    stall * 1000,
                    f"; the loop thread was in:\n{seen}" if seen else "",
                )


def _run_queue_wait(schedstat: int | None) -> float:
    """Seconds the thread whose ``schedstat`` is open has spent ready to run but waiting for a CPU (0
    where Linux does not say)."""
    if schedstat is None:
        return 0.0
    try:
        return int(os.pread(schedstat, 128, 0).split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0
