"""The deadline watchdog on its own: progress keeps a stream alive past many idle windows, non-progress
does not, an idle deadline shorter than the first-token one fires on time, and a cancel from outside
stays a cancel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from iris.app.runs.intake.deadlines import DeadlineExceeded, Deadlines, paced
from iris.providers import ProviderEvent, ReasoningDelta, ReasoningStart, TextDelta, TextStart
from tests.support.waits import REQUEST_SECONDS


async def _every(seconds: float, count: int, event: ProviderEvent) -> AsyncGenerator[ProviderEvent, None]:
    for _ in range(count):
        await asyncio.sleep(seconds)
        yield event


async def _drain(events: AsyncGenerator[ProviderEvent, None]) -> int:
    return len([event async for event in events])


@pytest.mark.parametrize("event", [TextDelta(id="t", delta="x"), ReasoningDelta(id="r", delta="hmm")])
async def test_progress_faster_than_the_idle_deadline_keeps_the_stream_going(event: ProviderEvent) -> None:
    # A model that thinks for a long time is making progress: its thoughts count like its answer.
    stream = paced(_every(0.05, 12, event), Deadlines(first_token=0.2, idle=0.2, run=9))
    assert await _drain(stream) == 12  # 0.6 s in all: three idle windows, each reset by progress


@pytest.mark.parametrize(
    "event",
    [
        TextStart(id="t"),
        ReasoningStart(id="r"),
        TextDelta(id="t", delta=""),
        ReasoningDelta(id="r", delta=""),
    ],
)
async def test_events_that_are_not_progress_do_not_reset_the_first_token_deadline(
    event: ProviderEvent,
) -> None:
    stream = paced(_every(0.05, 12, event), Deadlines(first_token=0.2, idle=9, run=9))
    with pytest.raises(DeadlineExceeded) as failed:
        await _drain(stream)
    assert failed.value.code == "provider_timeout"


async def _then_silence(event: ProviderEvent) -> AsyncGenerator[ProviderEvent, None]:
    yield event
    await asyncio.Event().wait()  # a vendor that went quiet after its first content


async def test_an_idle_deadline_shorter_than_the_first_token_one_fires_after_the_first_content() -> None:
    # The first token may take an hour (a slow-starting model), the gaps after it 0.1 s: the idle
    # deadline ends the stream, not the hour-long first-token timer that was armed when it began.
    stream = paced(_then_silence(TextDelta(id="t", delta="x")), Deadlines(first_token=3600, idle=0.1, run=9))
    with pytest.raises(DeadlineExceeded) as failed:
        await asyncio.wait_for(_drain(stream), REQUEST_SECONDS)
    assert failed.value.code == "provider_idle_timeout"


async def test_a_cancel_from_outside_is_not_taken_for_a_deadline() -> None:
    stream = paced(_every(10, 1, TextDelta(id="t", delta="x")), Deadlines(first_token=0.1, idle=9, run=9))
    task = asyncio.create_task(_drain(stream))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
