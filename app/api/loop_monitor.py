"""Event-loop lag monitor: how long the loop thread was unable to run a ready callback.

One task sleeps ``interval`` seconds at a time and measures how late it wakes up. Anything that blocks
the loop thread (a native lock, a long garbage collection, a synchronous call) shows as a stall. It
costs one wake-up per interval; the worst stall is kept, and any stall over ``warn_seconds`` is logged.

A busy machine also makes wake-ups late: the loop thread was ready but waited for a CPU. Where Linux
tells (``/proc/thread-self/schedstat``: time spent waiting on a run queue), that wait is subtracted
into :attr:`LoopMonitor.max_blocked`, the worst time the loop thread was *blocked* — what Iris itself
is answerable for. Tests and ``bench/soak.py`` read both (the latter through ``GET /debug/loop``, which
exists only with ``IRIS_DEBUG``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

log = logging.getLogger("iris.loop")


class LoopMonitor:
    """Measures the running loop's worst wake-up delay; see the module docstring."""

    def __init__(self, interval: float = 0.02, warn_seconds: float = 0.25) -> None:
        self.interval = interval
        self.warn_seconds = warn_seconds
        self.max_stall = 0.0
        self.max_blocked = 0.0
        self.stalls = 0
        """How many wake-ups were blocked longer than ``warn_seconds``."""
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch(), name="loop monitor")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self) -> None:
        while True:
            before, queued_before = time.perf_counter(), _run_queue_wait()
            await asyncio.sleep(self.interval)
            stall = time.perf_counter() - before - self.interval
            blocked = max(0.0, stall - (_run_queue_wait() - queued_before))
            self.max_stall = max(self.max_stall, stall)
            self.max_blocked = max(self.max_blocked, blocked)
            if blocked > self.warn_seconds:
                self.stalls += 1
                log.warning("event loop blocked for %.0f ms (%.0f ms late)", blocked * 1000, stall * 1000)


_SCHEDSTAT = Path("/proc/thread-self/schedstat")


def _run_queue_wait() -> float:
    """Seconds this thread has spent ready to run but waiting for a CPU (0 where Linux does not say)."""
    try:
        return int(_SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0
