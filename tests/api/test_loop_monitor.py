"""The loop monitor (app/api/loop_monitor.py) measures how long the loop was blocked and, with
``stacks``, says where: the loop thread's frames during the worst block."""

from __future__ import annotations

import asyncio
import time

from app.api.loop_monitor import LoopMonitor


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
