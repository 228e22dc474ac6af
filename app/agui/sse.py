"""Server-sent events the way AG-UI 1.0 clients read them.

Frames end with LF only (the reference client fails on CRLF, which is Litestar's default
separator), each carries an ``id:`` line with the run's sequence number (for re-attaching with
``Last-Event-ID``), and a ``: ping`` comment goes out after a silence so proxies keep the line open.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

Frame = tuple[int, bytes]
"""``(sequence, event JSON)``; ``None`` in a queue of frames means the stream is over."""

PING = b": ping\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def frame(sequence: int, payload: bytes) -> bytes:
    """One event: ``id: N`` and one ``data:`` line of JSON (JSON has no raw newlines)."""
    return b"id: %d\ndata: %s\n\n" % (sequence, payload)


async def relay(
    queue: asyncio.Queue[Frame | None], *, ping_seconds: float, on_close: Callable[[], None]
) -> AsyncIterator[bytes]:
    """The SSE body for one subscriber, until the run ends; a client leaving only unsubscribes."""
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), ping_seconds)
            except TimeoutError:
                yield PING
                continue
            if item is None:
                return
            yield frame(*item)
    finally:
        on_close()
