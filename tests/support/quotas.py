"""Quota windows in tests: a test's requests must all fall in one window of the limit it checks."""

from __future__ import annotations

import asyncio
import time


async def clear_of_window_end(window: int, margin: float = 15.0) -> None:
    """Sleep past the end of the current window when it ends within ``margin`` seconds: the longest a
    test's few requests may take on a loaded machine, which must all fall in one window."""
    left = window - time.time() % window
    if left < margin:
        await asyncio.sleep(left + 0.1)
