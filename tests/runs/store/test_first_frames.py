"""A run's first frames reach a waiting stream at once, even when the vendor's whole answer arrives in
one burst (app/runs/store/live.py: RunChannel.publish): ``RUN_STARTED`` alone, then the first token with the
message start before it; later ones go out together."""

from __future__ import annotations

import asyncio

from iris.app.agui.events import RunStarted, TextMessageContent, TextMessageStart
from iris.app.agui.sse import Frame
from iris.app.runs.stateless.live_sink import LiveOnly
from iris.app.runs.store.live import SEND_TURNS, RunChannel


async def test_a_burst_sends_its_first_frames_at_once_and_the_rest_together() -> None:
    channel = RunChannel()
    subscription = channel.subscribe()
    batches: list[list[Frame]] = []

    async def stream() -> None:  # what app.agui.sse.relay does: one write per batch
        while (batch := await subscription.next_batch(5)) is not None:
            batches.append(batch)

    streaming = asyncio.create_task(stream())
    await asyncio.sleep(0)  # the stream is waiting
    sink = LiveOnly(channel)
    await sink.emit(RunStarted(thread_id="t", run_id="r", timestamp=0))
    await sink.emit(TextMessageStart(message_id="m", role="assistant"))
    for index in range(50):  # a burst: nothing in between gives the loop a turn
        await sink.emit(TextMessageContent(message_id="m", delta=f"w{index} "))
    channel.close()
    await streaming

    sizes = [len(batch) for batch in batches]
    assert sum(sizes) == 52
    assert SEND_TURNS == 2
    assert sizes == [1, 2, 49]  # RUN_STARTED; the message's start with its first token; the rest
