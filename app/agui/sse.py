"""Server-sent events the way AG-UI 1.0 clients read them.

Frames end with LF only (the reference client fails on CRLF, which is Litestar's default
separator), each carries an ``id:`` line with the run's sequence number (for re-attaching with
``Last-Event-ID``), and a ``: ping`` comment goes out after a silence so proxies keep the line open.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Protocol

Frame = tuple[int, bytes]
"""``(sequence, event JSON)``."""

PING = b": ping\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
PIECE_BYTES = 64 * 1024
"""The most event bytes one socket write carries: a backlog goes out in pieces, each one awaited (the
transport's flow control holds the next until the client has taken the last), so no write is large and
no join of a whole backlog ever holds the loop."""


class FrameSource(Protocol):
    async def next_batch(self, wait_seconds: float) -> list[Frame] | None:
        """Frames waiting (after waiting up to ``wait_seconds``; ``[]`` if none came), ``None`` once over."""
        ...

    @property
    def exhausted(self) -> bool:
        """Whether the frames handed out so far are all there will be (the run has ended)."""
        ...

    @property
    def parting(self) -> bytes | None:
        """Sent after the last frame when the stream ends before its run did (else ``None``)."""
        ...


class LastChunk(bytes):
    """A stream's last bytes, its run's last frames: the response sends them with its end, in one socket
    write instead of two (``iris.app.runs.engine.streaming.EventStream``)."""


FRAME = b"id: %d\ndata: %s\n\n"
"""One event, formatted with its :data:`Frame`: ``id: N`` and one ``data:`` line of JSON (JSON has no raw
newlines)."""
UNNUMBERED = b"data: %s\n\n"
"""A frame of sequence 0: an event that is not one of the run's (a ``MESSAGES_SNAPSHOT``), sent without an
``id:`` line so a client's ``Last-Event-ID`` stays the run's."""


async def relay(
    source: FrameSource, *, ping_seconds: float, on_close: Callable[[], None]
) -> AsyncGenerator[bytes, None]:
    """The SSE body for one subscriber, until the stream is over; a client leaving only unsubscribes.

    Frames that queued up while the last write was in flight go out together, in writes of at most
    :data:`PIECE_BYTES`, so a fast model costs one socket write per batch rather than per token.
    """
    try:
        while (batch := await source.next_batch(ping_seconds)) is not None:
            if not batch:
                yield PING
            pieces = list(_pieces(batch))
            last = source.exhausted and source.parting is None
            for index, piece in enumerate(pieces):
                chunk = b"".join([FRAME % f if f[0] else UNNUMBERED % f[1] for f in piece])
                yield LastChunk(chunk) if last and index == len(pieces) - 1 else chunk
        if source.parting is not None:
            yield source.parting
    finally:
        on_close()


def _pieces(batch: list[Frame]) -> Iterator[list[Frame]]:
    """``batch`` in runs of at most :data:`PIECE_BYTES` of payload (a larger frame alone)."""
    start, size = 0, 0
    for index, (_, payload) in enumerate(batch):
        if size and size + len(payload) > PIECE_BYTES:
            yield batch[start:index]
            start, size = index, 0
        size += len(payload)
    if start < len(batch):
        yield batch[start:]
