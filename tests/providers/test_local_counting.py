"""The offline model's ``count to <n>``: a slow answer on the defaults, so Stop and reload mid-answer can
be tried without an admin step (the README's tour does)."""

from __future__ import annotations

import time

from iris.providers import Message, ModelSpec, RequestOptions, TextPart
from iris.providers.events import TextDelta
from iris.providers.local import COUNT_PACE_SECONDS, LocalProvider

TEXT = ModelSpec(provider="local", model_id="text", type="text")


async def answer(text: str, options: RequestOptions | None = None) -> tuple[str, float]:
    """The streamed answer to one user message, and how long it took to stream."""
    started = time.monotonic()
    deltas = [
        event.delta
        async for event in LocalProvider().stream(
            [Message(role="user", parts=(TextPart(text=text),))], TEXT, options or RequestOptions()
        )
        if isinstance(event, TextDelta)
    ]
    return "".join(deltas), time.monotonic() - started


async def test_counting_streams_the_numbers_a_token_at_a_time() -> None:
    said, took = await answer("Please count to 6")
    assert said.endswith("\n1 2 3 4 5 6"), said
    assert took >= 6 * COUNT_PACE_SECONDS  # at least one pause per number: a lower bound only


async def test_counting_stops_at_two_hundred_and_a_set_delay_wins() -> None:
    said, _ = await answer("count to 5000", RequestOptions(extra={"local": {"delayMs": 1}}))
    assert said.endswith(" 199 200"), said[-40:]


async def test_other_messages_are_answered_as_before() -> None:
    said, _ = await answer("Hello")
    assert said.endswith("You said: Hello"), said
