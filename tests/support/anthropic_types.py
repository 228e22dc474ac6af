"""The ``anthropic`` SDK's own types as a strict oracle for ``/v1/messages`` answers and stream events.

The SDK parses leniently (``construct``), and its pydantic types default to ``None`` fields Anthropic's
API reference requires but allows to be ``null``. :func:`conforming` validates raw JSON with the SDK's
type, then walks the result and fails on any required key the JSON lacks, at every depth, those nullable
ones included. :func:`sse_events` reads a raw ``text/event-stream`` body as ``(event name, data)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TypeVar

from anthropic.types import Message, RawMessageStreamEvent, TextBlock, Usage
from anthropic.types.raw_message_delta_event import Delta
from pydantic import BaseModel, TypeAdapter

M = TypeVar("M", bound=BaseModel)

NULLABLE_REQUIRED: dict[type[BaseModel], frozenset[str]] = {
    Message: frozenset({"stop_reason", "stop_sequence"}),
    Usage: frozenset({"cache_creation_input_tokens", "cache_read_input_tokens"}),
    TextBlock: frozenset({"citations"}),
    Delta: frozenset({"stop_reason", "stop_sequence"}),
}
"""Keys Anthropic's API reference requires (``null`` allowed) that the SDK's types default to ``None``."""

STREAM_EVENT: TypeAdapter[RawMessageStreamEvent] = TypeAdapter(RawMessageStreamEvent)  # type: ignore[arg-type, unused-ignore]


def required_keys(model: type[BaseModel]) -> set[str]:
    required = {info.alias or name for name, info in model.model_fields.items() if info.is_required()}
    return required | NULLABLE_REQUIRED.get(model, frozenset())


def conforming(model: type[M], data: Any) -> M:
    """``data`` validated as ``model``; fails naming every required key missing at any depth."""
    parsed = model.model_validate(data)
    missing = list(_missing(parsed, data, model.__name__))
    assert not missing, f"missing required keys: {missing} in {data}"
    return parsed


def conforming_event(name: str, data: Any) -> RawMessageStreamEvent:
    """One stream event validated as the SDK's union (``ping`` and ``error`` are not in it), its
    ``event:`` name the same as its ``type``."""
    assert data["type"] == name
    event = STREAM_EVENT.validate_python(data)
    missing = list(_missing(event, data, name))
    assert not missing, f"missing required keys: {missing} in {data}"
    return event


def sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    """Each frame of an SSE body as ``(event, parsed data)``; every frame has both lines."""
    out: list[tuple[str, dict[str, Any]]] = []
    for frame in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.split("\n"))
        assert set(lines) == {"event", "data"}, frame
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def _missing(value: Any, raw: Any, path: str) -> Iterator[str]:
    if isinstance(value, BaseModel) and isinstance(raw, dict):
        for key in sorted(required_keys(type(value)) - set(raw)):
            yield f"{path}.{key}"
        for name, info in type(value).model_fields.items():
            key = info.alias or name
            if key in raw:
                yield from _missing(getattr(value, name), raw[key], f"{path}.{key}")
    elif isinstance(value, list) and isinstance(raw, list):
        for index, (item, raw_item) in enumerate(zip(value, raw, strict=False)):
            yield from _missing(item, raw_item, f"{path}[{index}]")
