"""The OpenAI gateway's SSE body (``stream_chunks``): the chunks of events already waiting go out
together, in one write, and the stream's last chunk (``[DONE]`` or the error) is the one the response
sends with its end; what a client parses is the same chunks as before, in order."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import msgspec

from iris.app.agui.events import AgUiEvent, RunError, RunFinished, TextMessageContent
from iris.app.agui.sse import LastChunk
from iris.app.api.openai.chunks import Answer, stream_chunks


def _events(deltas: Sequence[str], end: AgUiEvent) -> list[AgUiEvent]:
    return [*(TextMessageContent(message_id="m", delta=d) for d in deltas), end]


async def _written(events: list[AgUiEvent], waiting: int) -> list[bytes]:
    """What ``stream_chunks`` yields when the first ``waiting`` events were already queued at once."""
    remaining = list(events)

    async def source() -> AsyncIterator[AgUiEvent]:
        while remaining:
            yield remaining.pop(0)

    def queued() -> bool:
        return bool(remaining) and len(events) - len(remaining) < waiting

    body = stream_chunks(
        Answer(completion_id="chatcmpl-1", model="openai/gpt-4o"),
        source(),
        include_usage=False,
        error=lambda event: msgspec.Struct(),
        queued=queued,
    )
    return [chunk async for chunk in body]


def _data(chunks: list[bytes]) -> list[str]:
    return [line for line in b"".join(chunks).decode().split("\n") if line.startswith("data: ")]


async def test_a_burst_goes_out_in_one_write_ending_with_done() -> None:
    events = _events(["a", "b", "c", "d"], RunFinished(thread_id="t", run_id="r"))

    one_by_one = await _written(events, waiting=0)
    burst = await _written(events, waiting=len(events))

    assert len(one_by_one) == len(events)  # the role with "a", then "b", "c", "d", then the finish
    assert len(burst) == 1
    assert isinstance(burst[-1], LastChunk)
    assert isinstance(one_by_one[-1], LastChunk)
    assert not any(isinstance(chunk, LastChunk) for chunk in one_by_one[:-1])
    assert _data(burst)[-1] == "data: [DONE]"
    assert [msgspec.json.decode(d[6:])["choices"] for d in _data(burst)[:-1]] == [
        msgspec.json.decode(d[6:])["choices"] for d in _data(one_by_one)[:-1]
    ]


async def test_a_failure_is_the_last_chunk_with_what_came_before() -> None:
    events = _events(["a", "b"], RunError(message="boom", code="provider_unavailable"))

    chunks = await _written(events, waiting=2)

    assert len(chunks) == 2  # "a" and "b" together, then the error as the stream's end
    assert isinstance(chunks[-1], LastChunk)
    assert '"content":"b"' in chunks[0].decode()
