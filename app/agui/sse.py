"""Server-sent events the way AG-UI 1.0 clients read them.

Frames end with LF only (the reference client fails on CRLF, which is Litestar's default
separator), each carries an ``id:`` line with the run's sequence number (for re-attaching with
``Last-Event-ID``), and a ``: ping`` comment goes out after a silence so proxies keep the line open.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Protocol

Frame = tuple[int, bytes]
"""``(sequence, event JSON)``."""

PING = b": ping\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class FrameSource(Protocol):
    async def next_batch(self, wait_seconds: float) -> list[Frame] | None:
        """Frames waiting (after waiting up to ``wait_seconds``; ``[]`` if none came), ``None`` once over."""
        ...


def frame(sequence: int, payload: bytes) -> bytes:
    """One event: ``id: N`` and one ``data:`` line of JSON (JSON has no raw newlines)."""
    return b"id: %d\ndata: %s\n\n" % (sequence, payload)


async def relay(
    source: FrameSource, *, ping_seconds: float, on_close: Callable[[], None]
) -> AsyncGenerator[bytes, None]:
    """The SSE body for one subscriber, until the stream is over; a client leaving only unsubscribes.

    Frames that queued up while the last write was in flight go out together in one write, so a fast
    model costs one socket write per batch rather than per token.
    """
    try:
        while (batch := await source.next_batch(ping_seconds)) is not None:
            yield b"".join(frame(*f) for f in batch) if batch else PING
    finally:
        on_close()
