"""A vendor's server-sent events, parsed from its response body's bytes as they arrive.

Every token of a streamed answer passes through here, so the parser works on bytes in one layer: a
network read is split into lines once and each ``data:`` line is decoded once, where ``httpx-sse``
decoded the body to text, split the text into lines and partitioned each line in three more generator
layers (``bench/instructions.py``: ~12 k instructions per chunk of the answer more). It follows the
WHATWG event-stream rules the vendors' streams rely on: lines end with CRLF, LF or CR; ``data:`` lines
join with LF; comments (``:``) and ``id``/``retry`` are ignored; an event is dispatched at a blank
line (one with a name and no data too, as ``httpx-sse`` did, where the spec would drop it), and one the
body ends inside is dropped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

from iris.providers.errors import ProviderError

_BOM = b"\xef\xbb\xbf"


@dataclass(slots=True)
class ServerSentEvent:
    """One dispatched event: its ``event`` name (``""`` when the stream named none) and its ``data``."""

    event: str
    data: str


class EventStreamParser:
    """The event-stream state machine (no I/O): :meth:`feed` takes bytes split anywhere, even inside a
    line ending or a UTF-8 sequence, and returns the events they completed."""

    def __init__(self) -> None:
        self._pending = b""  # the start of a line whose end has not arrived
        self._event = b""
        self._data: list[bytes] = []
        self._started = False

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if self._pending:
            chunk = self._pending + chunk
        if not self._started:
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._pending = chunk  # too short yet to tell a BOM from data
                return []
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        if b"\r" in chunk:
            # A CR at the end may be the first half of a CRLF: it waits for the next read.
            held = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if held:
                chunk = chunk[:-1]
            *lines, self._pending = chunk.split(b"\n")
            if held:
                self._pending += b"\r"
        else:
            *lines, self._pending = chunk.split(b"\n")
        events: list[ServerSentEvent] = []
        for line in lines:
            if not line:
                if self._data or self._event:
                    events.append(self._dispatch())
            elif line.startswith(b"data:"):
                self._data.append(line[6:] if line[5:6] == b" " else line[5:])
            elif line[:1] != b":":
                field, _, value = line.partition(b":")
                value = value[1:] if value[:1] == b" " else value
                if field == b"event":
                    self._event = value
                elif field == b"data":  # ``data`` alone: an empty data line
                    self._data.append(value)
        return events

    def end(self) -> list[ServerSentEvent]:
        """At the end of the body: a CR held back ends its line (an event it completes is dispatched)."""
        if self._pending.endswith(b"\r"):
            self._pending = self._pending[:-1]
            return self.feed(b"\n")
        return []

    def _dispatch(self) -> ServerSentEvent:
        data = b"\n".join(self._data) if len(self._data) != 1 else self._data[0]
        event = ServerSentEvent(self._event.decode("utf-8", "replace"), data.decode("utf-8", "replace"))
        self._event, self._data = b"", []
        return event


async def server_sent_events(response: httpx.Response, provider: str) -> AsyncIterator[ServerSentEvent]:
    """The events of a streamed vendor answer; an answer that is not an event stream is the vendor's
    failure (``unavailable``), named by the content type it sent."""
    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type != "text/event-stream":
        sent = content_type or "no content type"
        message = f"the vendor answered {sent}, not an event stream"
        raise ProviderError("unavailable", message, provider=provider)
    parser = EventStreamParser()
    async for chunk in response.aiter_bytes():
        for event in parser.feed(chunk):
            yield event
    for event in parser.end():
        yield event
