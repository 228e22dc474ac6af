"""OpenAI's Chat Completions and Models shapes, as msgspec structs.

OpenAI's JSON is snake_case, so these structs do not use Iris's camelCase ``WireStruct`` base (which
renames every field): :class:`OpenAIStruct` is their own explicit base, with field names as sent.
Requests ignore unknown fields, as OpenAI does; a field of the wrong type is refused (a 400).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec


class OpenAIStruct(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Base of every OpenAI shape: names as OpenAI spells them, defaults left out of answers.

    ``omit_defaults`` drops every field equal to its default, so a field OpenAI requires never has one
    in an answer: a constant (``object``, ``role``, a tool call's ``type``) is a msgspec tag, always
    sent; a required field that may be ``null`` sits in a struct with ``omit_defaults=False``.
    """


# --- request ---------------------------------------------------------------------------------------


class TextContent(OpenAIStruct, tag="text", tag_field="type"):
    text: str


class ImageUrl(OpenAIStruct):
    url: str
    detail: Literal["auto", "low", "high"] = "auto"


class ImageContent(OpenAIStruct, tag="image_url", tag_field="type"):
    image_url: ImageUrl


class FileData(OpenAIStruct):
    """A PDF inline (``file_data``: a base64 ``data:`` URL, with its ``filename``), or a ``file_id`` of
    OpenAI's Files API (refused: Iris holds no such files)."""

    file_data: str | None = None
    file_id: str | None = None
    filename: str | None = None


class FileContent(OpenAIStruct, tag="file", tag_field="type"):
    file: FileData


class InputAudio(OpenAIStruct):
    """Base64 audio (no ``data:`` prefix) and the format the client says it is."""

    data: str
    format: Literal["wav", "mp3"]


class InputAudioContent(OpenAIStruct, tag="input_audio", tag_field="type"):
    input_audio: InputAudio


UserPart = TextContent | ImageContent | FileContent | InputAudioContent
UserContent = str | list[UserPart]
TextOnly = str | list[TextContent]


class FunctionCallIn(OpenAIStruct):
    name: str
    arguments: str = ""


class ToolCallIn(OpenAIStruct):
    id: str
    function: FunctionCallIn
    type: Literal["function"] = "function"


class OpenAISystemMessage(OpenAIStruct, tag="system", tag_field="role"):
    content: TextOnly
    name: str | None = None


class OpenAIDeveloperMessage(OpenAIStruct, tag="developer", tag_field="role"):
    content: TextOnly
    name: str | None = None


class OpenAIUserMessage(OpenAIStruct, tag="user", tag_field="role"):
    content: UserContent
    name: str | None = None


class OpenAIAssistantMessage(OpenAIStruct, tag="assistant", tag_field="role"):
    content: TextOnly | None = None
    tool_calls: list[ToolCallIn] | None = None
    name: str | None = None


class OpenAIToolMessage(OpenAIStruct, tag="tool", tag_field="role"):
    content: TextOnly
    tool_call_id: str


ChatMessage = (
    OpenAISystemMessage
    | OpenAIDeveloperMessage
    | OpenAIUserMessage
    | OpenAIAssistantMessage
    | OpenAIToolMessage
)


class FunctionDef(OpenAIStruct):
    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(default_factory=dict)
    strict: bool | None = None


class ToolDef(OpenAIStruct):
    function: FunctionDef
    type: Literal["function"] = "function"


class NamedFunction(OpenAIStruct):
    name: str


class NamedToolChoice(OpenAIStruct):
    function: NamedFunction
    type: Literal["function"] = "function"


class JsonSchemaFormat(OpenAIStruct):
    name: str = "response"
    schema: dict[str, Any] = msgspec.field(default_factory=dict)
    strict: bool | None = None
    description: str | None = None


class TextFormatIn(OpenAIStruct, tag="text", tag_field="type"):
    """Plain text (the default)."""


class JsonObjectFormatIn(OpenAIStruct, tag="json_object", tag_field="type"):
    """Any JSON object."""


class JsonSchemaFormatIn(OpenAIStruct, tag="json_schema", tag_field="type"):
    """JSON that ``json_schema`` accepts (which it must give: the body's check says so, as the document)."""

    json_schema: JsonSchemaFormat


ResponseFormatIn = TextFormatIn | JsonObjectFormatIn | JsonSchemaFormatIn


class StreamOptions(OpenAIStruct):
    include_usage: bool = False


class ChatCompletionRequest(OpenAIStruct):
    """``POST /v1/chat/completions``: what Iris honours of OpenAI's body (``n`` must be 1)."""

    model: str
    messages: list[ChatMessage]
    stream: bool = False
    stream_options: StreamOptions | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    seed: int | None = None
    response_format: ResponseFormatIn | None = None
    tools: list[ToolDef] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = None
    user: str | None = None
    n: Annotated[int, msgspec.Meta(ge=1, le=1)] | None = None
    """Only one choice is made: the document says so, and the body's check refuses any other."""


# --- answers ---------------------------------------------------------------------------------------

FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]


class OpenAIFunctionCallOut(OpenAIStruct):
    name: str
    arguments: str


class OpenAIToolCallOut(OpenAIStruct, tag="function", tag_field="type"):
    """``type`` is a tag, so it is always sent (as a default it was dropped, and clients refuse that)."""

    id: str
    function: OpenAIFunctionCallOut


class PromptTokensDetails(OpenAIStruct, omit_defaults=False):
    cached_tokens: int = 0


class CompletionTokensDetails(OpenAIStruct, omit_defaults=False):
    reasoning_tokens: int = 0


class CompletionUsage(OpenAIStruct, omit_defaults=False):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails
    completion_tokens_details: CompletionTokensDetails


class AssistantAnswer(OpenAIStruct, tag="assistant", tag_field="role", omit_defaults=False):
    content: str | None
    tool_calls: list[OpenAIToolCallOut] | None = None
    reasoning_content: str | None = None
    refusal: None = None


class Choice(OpenAIStruct, omit_defaults=False):
    index: int
    message: AssistantAnswer
    finish_reason: FinishReason
    logprobs: None = None


class ChatCompletion(OpenAIStruct, tag="chat.completion", tag_field="object", omit_defaults=False):
    """A non-streamed answer."""

    id: str
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage | None = None


class FunctionDelta(OpenAIStruct):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(OpenAIStruct):
    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: FunctionDelta | None = None


class Delta(OpenAIStruct):
    role: Literal["assistant"] | None = None
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(OpenAIStruct, omit_defaults=False):
    index: int
    delta: Delta
    finish_reason: FinishReason | None = None
    logprobs: None = None


class ChatCompletionChunk(OpenAIStruct, tag="chat.completion.chunk", tag_field="object", omit_defaults=False):
    """One streamed piece of an answer."""

    id: str
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: CompletionUsage | None = None


class ModelCard(OpenAIStruct, tag="model", tag_field="object", omit_defaults=False):
    """One model (``id`` = ``provider/modelId``)."""

    id: str
    created: int
    owned_by: str


class ModelCards(OpenAIStruct, tag="list", tag_field="object", omit_defaults=False):
    data: list[ModelCard]


class ErrorBody(OpenAIStruct, omit_defaults=False):
    """``type`` is OpenAI's error class; ``code`` is Iris's stable code (``model_not_found`` …)."""

    message: str
    type: str
    param: str | None
    code: str


class ErrorAnswer(OpenAIStruct, omit_defaults=False):
    """Every error of ``/v1``, and the last chunk of a stream that failed."""

    error: ErrorBody


ROOTS = (ChatCompletionRequest, ChatCompletion, ChatCompletionChunk, ModelCards, ErrorAnswer)
"""The gateway's component schemas in the OpenAPI document (msgspec's, names as on the wire)."""
