"""What a provider's ``stream()`` yields: vendor-neutral start/delta/end events (Vercel's stream parts)."""

from __future__ import annotations

from typing import Literal

import msgspec

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error", "other"]
WarningKind = Literal["unsupported", "compatibility", "other"]


class _Event(msgspec.Struct, tag_field="type", frozen=True, kw_only=True):
    pass


class TextStart(_Event, tag="text_start", frozen=True):
    id: str


class TextDelta(_Event, tag="text_delta", frozen=True):
    id: str
    delta: str


class TextEnd(_Event, tag="text_end", frozen=True):
    id: str


class ToolCallStart(_Event, tag="tool_call_start", frozen=True):
    id: str
    name: str


class ToolCallArgs(_Event, tag="tool_call_args", frozen=True):
    id: str
    delta: str


class ToolCallEnd(_Event, tag="tool_call_end", frozen=True):
    id: str


class Usage(_Event, tag="usage", frozen=True):
    """Token counts as the vendor reported them (``None`` where it did not)."""

    input_tokens: int | None = None
    output_tokens: int | None = None


class Finish(_Event, tag="finish", frozen=True):
    reason: FinishReason


class Warning(_Event, tag="warning", frozen=True):
    """Something requested could not be honoured exactly; the stream goes on."""

    kind: WarningKind
    message: str


ProviderEvent = (
    TextStart | TextDelta | TextEnd | ToolCallStart | ToolCallArgs | ToolCallEnd | Usage | Finish | Warning
)
