"""The vendors' event-stream parser: the same events however the body's bytes are split, the WHATWG
line rules, and a real response body over HTTP (chunked, gzipped, or not an event stream at all)."""

from __future__ import annotations

import gzip
import itertools
import random
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from iris.providers.errors import ProviderError
from iris.providers.sse import EventStreamParser, server_sent_events
from tests.support.http_server import serve_asgi

STREAM = (
    "\ufeff: a comment the parser skips\n"
    'data: {"a":1}\n\n'
    "event: message_start\n"
    'data: {"type":"message_start"}\n\n'
    "id: 7\nretry: 100\n"
    "data: first line\n"
    "data:second line, no space\n"
    "data:  two spaces keep one\n\n"
    "data\n\n"  # a field with no colon: an empty data line
    "event: ping\n\n"  # an event with a name and no data is still dispatched
    "data: é中文 🦜\n\n"
    "\n\n"  # blank lines with nothing pending dispatch nothing
    "data: [DONE]\n\n"
    "data: cut off by the end of the body"
).encode()
EXPECTED = [
    ("", '{"a":1}'),
    ("message_start", '{"type":"message_start"}'),
    ("", "first line\nsecond line, no space\n two spaces keep one"),
    ("", ""),
    ("ping", ""),
    ("", "é中文 🦜"),
    ("", "[DONE]"),
]


def parse(pieces: Sequence[bytes]) -> list[tuple[str, str]]:
    parser = EventStreamParser()
    events = [event for piece in pieces for event in parser.feed(piece)] + parser.end()
    return [(event.event, event.data) for event in events]


def split(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted(cuts), len(data)]
    return [data[start:end] for start, end in itertools.pairwise(bounds)]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_every_split_point_gives_the_same_events(newline: str) -> None:
    stream = STREAM.replace(b"\n", newline.encode())
    assert parse([stream]) == EXPECTED
    for cut in range(len(stream) + 1):  # inside a CRLF, a UTF-8 sequence, the BOM, a field name
        assert parse(split(stream, [cut])) == EXPECTED, f"split at byte {cut}"


def test_random_splits_and_single_bytes() -> None:
    rng = random.Random(26)
    stream = STREAM.replace(b"\n\n", b"\r\n\n").replace(b"data: f", b"data: f\r")
    expected = parse([stream])
    assert ("", "first line\nsecond line, no space\n two spaces keep one") not in expected  # CR split it
    assert parse([bytes([byte]) for byte in stream]) == expected
    for _ in range(300):
        cuts = rng.sample(range(len(stream)), rng.randint(1, 40))
        assert parse(split(stream, cuts)) == expected


def test_a_cr_at_the_very_end_ends_its_line() -> None:
    assert parse([b"data: x\r", b"\r"]) == [("", "x")]
    assert parse([b"data: x\r\r"]) == [("", "x")]
    assert parse([b"data: x\r"]) == []  # the line ended, the event did not


def test_invalid_utf8_is_replaced_never_raised() -> None:
    assert parse([b"data: \xff\xfe ok\n\n"]) == [("", "\ufffd\ufffd ok")]


def test_a_bom_only_at_the_start_is_dropped() -> None:
    assert parse([b"\xef", b"\xbb", b"\xbfdata: a\n\n"]) == [("", "a")]
    assert parse([b"data: \xef\xbb\xbfa\n\n"]) == [("", "\ufeffa")]
    assert parse([b"\xef\xbb"]) == []


# --- over HTTP ------------------------------------------------------------------------------------------

Scope = dict[str, Any]


def _pieces() -> Iterator[bytes]:
    """STREAM with CRLF line ends, in pieces cut inside a CRLF and inside a multi-byte character."""
    stream = STREAM.replace(b"\n", b"\r\n")
    crlf = stream.index(b"\r\n") + 1
    parrot = stream.index("🦜".encode()) + 2
    yield from split(stream, [crlf, parrot])


def _app(content_type: bytes, *, gzipped: bool = False) -> Any:
    async def app(scope: Scope, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body", False):
            pass
        headers = [(b"content-type", content_type)]
        pieces = list(_pieces())
        if gzipped:
            headers.append((b"content-encoding", b"gzip"))
            pieces = split(gzip.compress(b"".join(pieces)), [10, 40, 80])
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for piece in pieces:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


@pytest.mark.parametrize("gzipped", [False, True], ids=["chunked", "gzip"])
async def test_a_streamed_body(http: httpx.AsyncClient, gzipped: bool) -> None:
    with serve_asgi(_app(b"text/event-stream; charset=utf-8", gzipped=gzipped)) as url:
        async with http.stream("POST", url, content=b"{}") as response:
            events = [(e.event, e.data) async for e in server_sent_events(response, "openai")]
    assert events == EXPECTED


async def test_an_answer_that_is_not_an_event_stream(http: httpx.AsyncClient) -> None:
    with serve_asgi(_app(b"text/html")) as url:
        async with http.stream("POST", url, content=b"{}") as response:
            with pytest.raises(ProviderError) as raised:
                async for _ in server_sent_events(response, "openai"):
                    pass
    assert raised.value.kind == "unavailable"
    assert raised.value.provider == "openai"
    assert "text/html, not an event stream" in raised.value.message
