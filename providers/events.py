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


class ReasoningStart(_Event, tag="reasoning_start", frozen=True):
    """The model starts thinking; ``id`` names this span of reasoning."""

    id: str


class ReasoningDelta(_Event, tag="reasoning_delta", frozen=True):
    id: str
    delta: str


class ReasoningEnd(_Event, tag="reasoning_end", frozen=True):
    id: str


class ReasoningOpaque(_Event, tag="reasoning_opaque", frozen=True):
    """An opaque block the vendor requires back unchanged on a later request.

    ``signature`` signs the readable reasoning ``id`` (Anthropic ``signature_delta``, a Gemini thought
    signature; for Gemini ``tool_call_id`` names the function call it rode on); ``redacted`` is a
    block with no readable text at all (Anthropic ``redacted_thinking``): never shown, only replayed.
    """

    id: str
    kind: Literal["signature", "redacted"]
    value: str
    tool_call_id: str | None = None


class Usage(_Event, tag="usage", frozen=True):
    """Token counts as the vendor reported them (``None`` where it did not).

    ``input_tokens`` and ``output_tokens`` are totals: ``cached_input_tokens`` and ``image_tokens``
    are parts of the input, ``reasoning_tokens`` a part of the output (AG-UI's accounting).
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    image_tokens: int | None = None


class Finish(_Event, tag="finish", frozen=True):
    reason: FinishReason
    stop_sequence: str | None = None
    """The request's stop sequence that ended the answer (``reason`` ``stop``), when the vendor says
    which: Anthropic does, OpenAI's and Gemini's APIs do not."""


class Warning(_Event, tag="warning", frozen=True):
    """Something requested could not be honoured exactly; the stream goes on."""

    kind: WarningKind
    message: str


ProviderEvent = (
    TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ReasoningOpaque
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | Usage
    | Finish
    | Warning
)
