"""Anthropic's Messages API shapes, as msgspec structs.

Anthropic's JSON is snake_case, so these structs keep their own base (:class:`AnthropicStruct`) with
field names as Anthropic sends them. Requests ignore unknown fields (Anthropic adds fields often, and
clients such as Claude Code send the newest); a field of the wrong type, or a content block type Iris
does not take, is refused (a 400). ``cache_control`` is accepted on every block that may carry it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec


class AnthropicStruct(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Base of every Anthropic shape: names as Anthropic spells them.

    ``omit_defaults`` drops a field equal to its default, so every answer struct that Anthropic's SDK
    types require a field of (even as ``null``) sets ``omit_defaults=False``; a constant ``type`` is a
    msgspec tag, always sent."""


CacheControl = dict[str, Any]
"""``{"type": "ephemeral", "ttl"?: "5m" | "1h"}``: kept as given, never refused."""

# --- request blocks --------------------------------------------------------------------------------


class Base64Source(AnthropicStruct, tag="base64", tag_field="type"):
    media_type: str
    data: str


class UrlSource(AnthropicStruct, tag="url", tag_field="type"):
    url: str


class PlainTextSource(AnthropicStruct, tag="text", tag_field="type"):
    data: str
    media_type: str = "text/plain"


class TextBlockIn(AnthropicStruct, tag="text", tag_field="type"):
    text: str
    cache_control: CacheControl | None = None


class ImageBlockIn(AnthropicStruct, tag="image", tag_field="type"):
    source: Base64Source | UrlSource
    cache_control: CacheControl | None = None


class DocumentBlockIn(AnthropicStruct, tag="document", tag_field="type"):
    """A PDF (base64 or one of Iris's signed URLs) or plain text (``source.type: "text"``)."""

    source: Base64Source | UrlSource | PlainTextSource
    title: str | None = None
    context: str | None = None
    cache_control: CacheControl | None = None


class ToolUseBlockIn(AnthropicStruct, tag="tool_use", tag_field="type"):
    id: str
    name: str
    input: dict[str, Any] = msgspec.field(default_factory=dict)
    cache_control: CacheControl | None = None


class ToolResultBlockIn(AnthropicStruct, tag="tool_result", tag_field="type"):
    tool_use_id: str
    content: str | list[TextBlockIn | ImageBlockIn | DocumentBlockIn] = ""
    is_error: bool = False
    cache_control: CacheControl | None = None


class ThinkingBlockIn(AnthropicStruct, tag="thinking", tag_field="type"):
    thinking: str
    signature: str = ""


class RedactedThinkingBlockIn(AnthropicStruct, tag="redacted_thinking", tag_field="type"):
    data: str


UserBlockIn = TextBlockIn | ImageBlockIn | DocumentBlockIn | ToolResultBlockIn
AssistantBlockIn = TextBlockIn | ThinkingBlockIn | RedactedThinkingBlockIn | ToolUseBlockIn


class UserMessageIn(AnthropicStruct, tag="user", tag_field="role"):
    content: str | list[UserBlockIn]


class AssistantMessageIn(AnthropicStruct, tag="assistant", tag_field="role"):
    content: str | list[AssistantBlockIn]


class SystemMessageIn(AnthropicStruct, tag="system", tag_field="role"):
    """A ``system`` turn (the SDKs' newest ``MessageParam``): it joins the system prompt."""

    content: str | list[TextBlockIn]


MessageIn = UserMessageIn | AssistantMessageIn | SystemMessageIn


class ToolIn(AnthropicStruct):
    """A client tool (``input_schema``; ``type`` absent or ``custom``). Anthropic's server tools
    (``type`` such as ``web_search_20250305``, no ``input_schema``) are refused: Iris does not run them."""

    name: str
    input_schema: dict[str, Any]
    type: Literal["custom"] | None = None
    description: str = ""
    cache_control: CacheControl | None = None


class ToolChoiceAuto(AnthropicStruct, tag="auto", tag_field="type"):
    disable_parallel_tool_use: bool | None = None


class ToolChoiceAny(AnthropicStruct, tag="any", tag_field="type"):
    disable_parallel_tool_use: bool | None = None


class ToolChoiceTool(AnthropicStruct, tag="tool", tag_field="type"):
    name: str
    disable_parallel_tool_use: bool | None = None


class ToolChoiceNone(AnthropicStruct, tag="none", tag_field="type"):
    pass


ToolChoiceIn = ToolChoiceAuto | ToolChoiceAny | ToolChoiceTool | ToolChoiceNone


class ThinkingEnabled(AnthropicStruct, tag="enabled", tag_field="type"):
    budget_tokens: Annotated[int, msgspec.Meta(ge=1024)]


class ThinkingAdaptive(AnthropicStruct, tag="adaptive", tag_field="type"):
    pass


class ThinkingDisabled(AnthropicStruct, tag="disabled", tag_field="type"):
    pass


ThinkingIn = ThinkingEnabled | ThinkingAdaptive | ThinkingDisabled


class OutputFormatIn(AnthropicStruct):
    """A JSON schema the answer must match (Anthropic's structured outputs)."""

    type: Literal["json_schema"]
    schema: dict[str, Any]


class OutputConfigIn(AnthropicStruct):
    """``effort`` sets the reasoning effort of adaptive thinking; ``format`` the JSON schema the answer
    must match, for models that take one (refused where they do not)."""

    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    format: OutputFormatIn | None = None


class MetadataIn(AnthropicStruct):
    user_id: str | None = None


class CountTokensRequest(AnthropicStruct):
    """``POST /v1/messages/count_tokens``: a Messages body without ``max_tokens`` or sampling knobs."""

    model: str
    messages: Annotated[list[MessageIn], msgspec.Meta(min_length=1)]
    system: str | list[TextBlockIn] | None = None
    tools: list[ToolIn] | None = None
    tool_choice: ToolChoiceIn | None = None
    thinking: ThinkingIn | None = None
    output_config: OutputConfigIn | None = None
    cache_control: CacheControl | None = None


class MessagesRequest(CountTokensRequest, kw_only=True):
    """``POST /v1/messages``: what Iris honours of Anthropic's body (``max_tokens`` is required, as
    Anthropic requires it)."""

    max_tokens: Annotated[int, msgspec.Meta(ge=1)]
    stream: bool = False
    stop_sequences: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: Annotated[int, msgspec.Meta(ge=0)] | None = None
    metadata: MetadataIn | None = None


# --- answers ---------------------------------------------------------------------------------------

AnthropicStopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal", "pause_turn"]


class AnthropicTextBlock(AnthropicStruct, tag="text", tag_field="type", omit_defaults=False):
    text: str
    citations: None = None


class AnthropicThinkingBlock(AnthropicStruct, tag="thinking", tag_field="type", omit_defaults=False):
    thinking: str
    signature: str


class AnthropicRedactedThinkingBlock(
    AnthropicStruct, tag="redacted_thinking", tag_field="type", omit_defaults=False
):
    data: str


class AnthropicToolUseBlock(AnthropicStruct, tag="tool_use", tag_field="type", omit_defaults=False):
    id: str
    name: str
    input: dict[str, Any]


AnthropicContentBlock = (
    AnthropicTextBlock | AnthropicThinkingBlock | AnthropicRedactedThinkingBlock | AnthropicToolUseBlock
)


class AnthropicUsage(AnthropicStruct, omit_defaults=False):
    """``input_tokens`` excludes the tokens read from the cache, as Anthropic counts them."""

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0


class AnthropicMessage(AnthropicStruct, tag="message", tag_field="type", omit_defaults=False):
    """A non-streamed answer (and, empty, the one ``message_start`` carries)."""

    id: str
    role: Literal["assistant"]
    content: list[AnthropicContentBlock]
    model: str
    stop_reason: AnthropicStopReason | None
    stop_sequence: str | None
    usage: AnthropicUsage


class AnthropicTextDelta(AnthropicStruct, tag="text_delta", tag_field="type", omit_defaults=False):
    text: str


class AnthropicThinkingDelta(AnthropicStruct, tag="thinking_delta", tag_field="type", omit_defaults=False):
    thinking: str


class AnthropicSignatureDelta(AnthropicStruct, tag="signature_delta", tag_field="type", omit_defaults=False):
    signature: str


class AnthropicInputJsonDelta(AnthropicStruct, tag="input_json_delta", tag_field="type", omit_defaults=False):
    partial_json: str


AnthropicBlockDelta = (
    AnthropicTextDelta | AnthropicThinkingDelta | AnthropicSignatureDelta | AnthropicInputJsonDelta
)


class AnthropicMessageStart(AnthropicStruct, tag="message_start", tag_field="type", omit_defaults=False):
    message: AnthropicMessage


class AnthropicContentBlockStart(
    AnthropicStruct, tag="content_block_start", tag_field="type", omit_defaults=False
):
    index: int
    content_block: AnthropicContentBlock


class AnthropicContentBlockDelta(
    AnthropicStruct, tag="content_block_delta", tag_field="type", omit_defaults=False
):
    index: int
    delta: AnthropicBlockDelta


class AnthropicContentBlockStop(
    AnthropicStruct, tag="content_block_stop", tag_field="type", omit_defaults=False
):
    index: int


class AnthropicStopDelta(AnthropicStruct, omit_defaults=False):
    stop_reason: AnthropicStopReason | None
    stop_sequence: str | None


class AnthropicDeltaUsage(AnthropicStruct, omit_defaults=False):
    """The whole run's usage, sent once the run has ended (``message_start`` cannot know it yet)."""

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0


class AnthropicMessageDelta(AnthropicStruct, tag="message_delta", tag_field="type", omit_defaults=False):
    delta: AnthropicStopDelta
    usage: AnthropicDeltaUsage


class AnthropicMessageStop(AnthropicStruct, tag="message_stop", tag_field="type", omit_defaults=False):
    pass


class AnthropicPing(AnthropicStruct, tag="ping", tag_field="type", omit_defaults=False):
    pass


AnthropicStreamEvent = (
    AnthropicMessageStart
    | AnthropicContentBlockStart
    | AnthropicContentBlockDelta
    | AnthropicContentBlockStop
    | AnthropicMessageDelta
    | AnthropicMessageStop
)


class AnthropicTokenCount(AnthropicStruct, omit_defaults=False):
    """``count_tokens``' answer: Iris's estimate of the request's input tokens."""

    input_tokens: int


class AnthropicErrorDetails(AnthropicStruct, omit_defaults=False):
    """Where Anthropic's SDKs read a stable code (``APIStatusError.error_code``): Iris's own."""

    error_code: str


class AnthropicErrorObject(AnthropicStruct, omit_defaults=False):
    type: str
    message: str
    details: AnthropicErrorDetails


class AnthropicErrorAnswer(AnthropicStruct, tag="error", tag_field="type", omit_defaults=False):
    """Every error of ``/v1/messages``, and the ``error`` event that ends a stream that failed."""

    error: AnthropicErrorObject


class AnthropicModel(AnthropicStruct, tag="model", tag_field="type", omit_defaults=False):
    """One model as Anthropic's ``GET /v1/models`` lists it (``id`` = ``provider/modelId``)."""

    id: str
    display_name: str
    created_at: str


class AnthropicModels(AnthropicStruct, omit_defaults=False):
    data: list[AnthropicModel]
    first_id: str | None
    last_id: str | None
    has_more: bool = False


ROOTS = (
    MessagesRequest,
    CountTokensRequest,
    AnthropicMessage,
    AnthropicMessageStart,
    AnthropicContentBlockStart,
    AnthropicContentBlockDelta,
    AnthropicContentBlockStop,
    AnthropicMessageDelta,
    AnthropicMessageStop,
    AnthropicPing,
    AnthropicTokenCount,
    AnthropicErrorAnswer,
    AnthropicModels,
)
"""The Messages API's component schemas in the OpenAPI document (names as on the wire)."""
