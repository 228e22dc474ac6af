"""Test data and helpers that the vendor provider tests share word for word.

Only what is the same in several modules lives here; a module's own variant (another image size, a
vendor-shaped tool schema, its ``make``/``live`` factory) stays in that module.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

from iris.providers.errors import ProviderError
from iris.providers.events import ProviderEvent
from iris.providers.messages import ImagePart, Message, RequestOptions, TextPart, ToolSpec
from tests.support.images import image_bytes

KEY = "sk-test-123"
"""The API key every fake server accepts; it must never show in an error."""
PNG = image_bytes("PNG", (8, 6))
PNG_B64 = base64.b64encode(PNG).decode()
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
NO_OPTIONS = RequestOptions()
HI = [Message(role="user", parts=(TextPart(text="hi"),))]


def png() -> ImagePart:
    """:data:`PNG` as an image part."""
    return ImagePart(mime_type="image/png", width=8, height=6, data=PNG)


def user(*parts: TextPart | ImagePart) -> Message:
    return Message(role="user", parts=parts)


async def collect(stream: AsyncIterator[ProviderEvent]) -> list[ProviderEvent]:
    return [event async for event in stream]


async def collect_until_error(
    stream: AsyncIterator[ProviderEvent],
) -> tuple[list[ProviderEvent], ProviderError]:
    events: list[ProviderEvent] = []
    try:
        async for event in stream:
            events.append(event)
    except ProviderError as exc:
        return events, exc
    raise AssertionError(f"the stream ended without an error after {events}")


async def events_and_error(
    stream: AsyncIterator[ProviderEvent],
) -> tuple[list[ProviderEvent], ProviderError | None]:
    """Every event the stream yielded, and the error that ended it (if one did), which never shows KEY."""
    events: list[ProviderEvent] = []
    error: ProviderError | None = None
    try:
        async for event in stream:
            events.append(event)
    except ProviderError as exc:
        error = exc
    if error is not None:
        assert KEY not in str(error)
        assert KEY not in error.message
    return events, error
