"""How long a test waits for a signal before it calls the wait a failure: one place, sized for a loaded
2-core machine (the suite beside another job that keeps both cores busy, ``stress --cpu 2``).

Every wait ends as soon as its signal comes (an element, a response, a log line, a port that answers,
a process that exits), so these bounds cost nothing when all goes well: they only say when to stop
waiting. No library's default (Playwright's 5 s ``expect``, httpx's 5 s, ``subprocess.run``'s
forever) decides that. Speed is measured in bench/, never here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

PAGE_SECONDS = 30.0
"""Chromium renders a page or answers a user action: Swagger UI laying out the whole OpenAPI document,
or the chat page streaming a local model's answer to its end."""

SERVER_SECONDS = 60.0
"""A server starts (``python -m iris serve``, Iris on a thread, Chromium, PostgreSQL) until it answers,
or stops until its process has exited."""

REQUEST_SECONDS = 30.0
"""One HTTP request to a loopback server, its whole response read (the OpenAPI document included); or
one short thing that another thread or process does while a test waits for it (a row in its log, a
checkpoint, a lock let go)."""

DISK_SECONDS = 180.0
"""A write that reaches the disk (a WAL checkpoint copying pages into the database file) while other
processes flood it with writes: the kernel holds every writer back until their dirty pages drain,
which beside a process writing gigabytes with fsync is minutes, not seconds."""

SUBPROCESS_SECONDS = 300.0
"""A command runs to its end: the CLI, ``alembic``, ``lint-imports``, a Node script, a nested pytest."""

INSTALL_SECONDS = 600.0
"""``npm install`` of a test's JavaScript packages from the registry."""


def ms(seconds: float) -> float:
    """``seconds`` in Playwright's unit."""
    return seconds * 1000


def until(ready: Callable[[], T | None], *, within: float, what: str, every: float = 0.05) -> T:
    """Poll ``ready`` until it returns something (not ``None``, not false) and return that; after
    ``within`` seconds, fail saying ``what`` never happened. For signals nothing can be subscribed to:
    a row in another process's database, a file another process writes."""
    deadline = time.monotonic() + within
    while True:
        found = ready()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within:.0f} s")
        time.sleep(every)


async def eventually(
    ready: Callable[[], Awaitable[T | None]], *, within: float, what: str, every: float = 0.05
) -> T:
    """:func:`until` for a coroutine check, sleeping on the event loop between tries."""
    deadline = time.monotonic() + within
    while True:
        found = await ready()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within:.0f} s")
        await asyncio.sleep(every)
