"""The loop monitor (app/api/loop_monitor.py) measures how long the loop was blocked and, with
``stacks``, says where: the loop thread's frames during the worst block."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iris.app.api.loop_monitor import LoopMonitor, _run_queue_wait

SCHEDSTAT = Path("/proc/thread-self/schedstat")
SPIN = "import time\nt = time.time()\nwhile time.time() - t < 1.5: pass"


def hold_the_loop(seconds: float) -> None:
    """A synchronous call on the loop thread, as a slow regular expression or a large encode would be."""
    time.sleep(seconds)  # sleeping, not waiting for a CPU: all of it counts as blocked


async def _monitored(monitor: LoopMonitor) -> None:
    monitor.start()
    try:
        await asyncio.sleep(0.05)
        hold_the_loop(0.3)
        await asyncio.sleep(0.05)
    finally:
        await monitor.stop()


async def test_a_blocked_loop_is_measured_and_its_stack_kept() -> None:
    monitor = LoopMonitor(interval=0.01, stacks=True, stack_after=0.05)
    await _monitored(monitor)
    assert monitor.max_blocked >= 0.25
    assert monitor.stalls == 1  # over the default 250 ms warning
    assert monitor.worst_stack is not None
    assert "hold_the_loop" in monitor.worst_stack
    assert "time.sleep(seconds)" in monitor.worst_stack


async def test_without_stacks_no_watchdog_looks() -> None:
    monitor = LoopMonitor(interval=0.01)
    await _monitored(monitor)
    assert monitor.max_blocked >= 0.25
    assert monitor.worst_stack is None


@pytest.mark.skipif(not SCHEDSTAT.exists(), reason="Linux's /proc/thread-self/schedstat is not here")
def test_the_kept_schedstat_reads_what_a_fresh_open_reads() -> None:
    """The monitor keeps the loop thread's ``schedstat`` open; each read must be current, not the
    first read's text again: busy processes on every core make this thread wait for a CPU meanwhile."""
    kept = os.open(SCHEDSTAT, os.O_RDONLY)
    try:
        first = _run_queue_wait(kept)
        busy = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range((os.cpu_count() or 1) + 1)]
        deadline = time.monotonic() + 1.2
        while time.monotonic() < deadline:
            pass  # ready to run the whole time, so every slice another process takes is queued
        for process in busy:
            process.wait()
        later = _run_queue_wait(kept)
        fresh = int(SCHEDSTAT.read_text().split()[1]) / 1e9
    finally:
        os.close(kept)
    assert later > first
    assert abs(fresh - later) < 0.05
