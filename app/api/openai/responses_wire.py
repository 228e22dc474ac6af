"""OpenAI's Responses API shapes (``/v1/responses``), as msgspec structs with OpenAI's own field names.

Requests ignore unknown fields, as OpenAI does. ``input`` items and ``tools`` are read one by one by
:mod:`~iris.app.api.openai.responses_input` (an item may leave out its ``type``, and a tool type Iris
does not run deserves its own error), so the request holds them as plain mappings. Answers send every
field the SDKs' types require, ``null`` included: their structs keep ``omit_defaults=False``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from iris.app.api.openai.wire import OpenAIStruct

# --- request ---------------------------------------------------------------------------------------


class InputText(OpenAIStruct, tag="input_text", tag_field="type"):
    text: str


class InputImage(OpenAIStruct, tag="input_image", tag_field="type"):
    """An image: a ``data:`` URL or an Iris-signed URL (a ``file_id`` is refused)."""

    image_url: str | None = None
    file_id: str | None = None
    detail: Literal["auto", "low", "high", "original"] = "auto"


class InputFile(OpenAIStruct, tag="input_file", tag_field="type"):
    """A PDF inline as ``file_data`` (a ``data:`` URL); a ``file_id`` or ``file_url`` is refused."""

    file_data: str | None = None
    file_id: str | None = None
    file_url: str | None = None
    filename: str | None = None


class InputAudioData(OpenAIStruct):
    data: str
    format: Literal["wav", "mp3"]


class InputAudio(OpenAIStruct, tag="input_audio", tag_field="type"):
    input_audio: InputAudioData


class OutputTextIn(OpenAIStruct, tag="output_text", tag_field="type"):
    """An earlier answer's text, sent back as history."""

    text: str


class RefusalIn(OpenAIStruct, tag="refusal", tag_field="type"):
    refusal: str


ContentIn = InputText | InputImage | InputFile | InputAudio | OutputTextIn | RefusalIn


class MessageItem(OpenAIStruct):
    """A ``message`` item (``type`` may be left out: the SDKs' "easy" input message)."""

    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[ContentIn]


class FunctionCallItem(OpenAIStruct):
    """A call the model made, sent back as history."""

    call_id: str
    name: str
    arguments: str = ""


class FunctionCallOutputItem(OpenAIStruct):
    """The client's answer to a call: text, or ``input_text`` parts."""

    call_id: str
    output: str | list[ContentIn]


class ItemReference(OpenAIStruct):
    """An item of one of the caller's stored responses, named by its ``id``."""

    id: str


class FunctionTool(OpenAIStruct):
    """A function tool in the Responses API's flat shape."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class FunctionChoice(OpenAIStruct, tag="function", tag_field="type"):
    name: str


ToolChoiceIn = Literal["none", "auto", "required"] | FunctionChoice


class ReasoningIn(OpenAIStruct):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None


class TextFormatPlain(OpenAIStruct, tag="text", tag_field="type"):
    """Plain text (the default)."""


class TextFormatJsonObject(OpenAIStruct, tag="json_object", tag_field="type"):
    """Any JSON object."""


class TextFormatJsonSchema(OpenAIStruct, tag="json_schema", tag_field="type"):
    """JSON that ``schema`` accepts (flat, unlike Chat Completions' ``json_schema`` wrapper)."""

    name: str = "response"
    schema: dict[str, Any] = msgspec.field(default_factory=dict)
    strict: bool | None = None
    description: str | None = None


TextFormat = TextFormatPlain | TextFormatJsonObject | TextFormatJsonSchema


class TextConfig(OpenAIStruct):
    format: TextFormat | None = None
    verbosity: Literal["low", "medium", "high"] | None = None


def _object(kind: str | None, required: list[str], **properties: Any) -> dict[str, Any]:
    """An item or part's schema: its ``type`` (required unless ``kind`` may be left out) and fields."""
    typed = {"type": {"enum": [kind.lstrip("?")]}} if kind else {}
    needed = required if kind is None or kind.startswith("?") else ["type", *required]
    return {"type": "object", "properties": {**typed, **properties}, "required": needed}


_TEXT = {"type": "string"}
_PARTS = [
    _object("input_text", ["text"], text=_TEXT),
    _object(
        "input_image", ["image_url"], image_url=_TEXT, detail={"enum": ["auto", "low", "high", "original"]}
    ),
    _object("input_file", ["file_data"], file_data=_TEXT, filename=_TEXT),
    _object(
        "input_audio",
        ["input_audio"],
        input_audio=_object(None, ["data", "format"], data=_TEXT, format={"enum": ["wav", "mp3"]}),
    ),
    _object("output_text", ["text"], text=_TEXT),
    _object("refusal", ["refusal"], refusal=_TEXT),
]
_CONTENT = {"anyOf": [_TEXT, {"type": "array", "items": {"anyOf": _PARTS}}]}
SCHEMA_PROPERTIES: dict[str, Any] = {
    "input": {
        "anyOf": [
            _TEXT,
            {
                "type": "array",
                "items": {
                    "anyOf": [
                        _object(
                            "?message",
                            ["role", "content"],
                            role={"enum": ["user", "assistant", "system", "developer"]},
                            content=_CONTENT,
                        ),
                        _object(
                            "function_call", ["call_id", "name"], call_id=_TEXT, name=_TEXT, arguments=_TEXT
                        ),
                        _object(
                            "function_call_output", ["call_id", "output"], call_id=_TEXT, output=_CONTENT
                        ),
                        _object("item_reference", ["id"], id=_TEXT),
                        _object("reasoning", []),
                    ]
                },
            },
        ],
        "default": "",
    },
    "tools": {
        "anyOf": [
            {
                "type": "array",
                "items": _object(
                    "function",
                    ["name"],
                    name=_TEXT,
                    description={"anyOf": [_TEXT, {"type": "null"}]},
                    parameters={"anyOf": [{"type": "object"}, {"type": "null"}]},
                    strict={"anyOf": [{"type": "boolean"}, {"type": "null"}]},
                ),
            },
            {"type": "null"},
        ],
        "default": None,
    },
}
"""What the OpenAPI document says ``input`` and ``tools`` hold (they are read one by one, so that an
item or tool type Iris does not take is its own clear error)."""


class ResponsesRequest(OpenAIStruct):
    """``POST /v1/responses``: what Iris honours of OpenAI's body; other fields are ignored."""

    model: str
    input: str | list[dict[str, Any]] = ""
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: ToolChoiceIn | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    reasoning: ReasoningIn | None = None
    text: TextConfig | None = None
    metadata: dict[str, str] | None = None
    parallel_tool_calls: bool | None = None
    user: str | None = None
    store: bool = True
    stream: bool = False
    previous_response_id: str | None = None
    include: list[str] | None = None


# --- answers ---------------------------------------------------------------------------------------


class OutputText(OpenAIStruct, tag="output_text", tag_field="type", omit_defaults=False):
    text: str
    annotations: list[dict[str, Any]] = msgspec.field(default_factory=list)
    logprobs: list[dict[str, Any]] = msgspec.field(default_factory=list)


class OutputMessage(OpenAIStruct, tag="message", tag_field="type", omit_defaults=False):
    id: str
    status: Literal["in_progress", "completed", "incomplete"]
    content: list[OutputText]
    role: Literal["assistant"] = "assistant"


class FunctionCallOut(OpenAIStruct, tag="function_call", tag_field="type", omit_defaults=False):
    id: str
    call_id: str
    name: str
    arguments: str
    status: Literal["in_progress", "completed", "incomplete"] = "completed"


class SummaryText(OpenAIStruct, tag="summary_text", tag_field="type", omit_defaults=False):
    text: str


class ReasoningOut(OpenAIStruct, tag="reasoning", tag_field="type", omit_defaults=False):
    id: str
    summary: list[SummaryText]
    status: Literal["in_progress", "completed", "incomplete"] = "completed"


OutputItem = OutputMessage | FunctionCallOut | ReasoningOut


class InputTokensDetails(OpenAIStruct, omit_defaults=False):
    cached_tokens: int = 0
    cache_write_tokens: int = 0


class OutputTokensDetails(OpenAIStruct, omit_defaults=False):
    reasoning_tokens: int = 0


class ResponseUsage(OpenAIStruct, omit_defaults=False):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class ResponseErrorBody(OpenAIStruct, omit_defaults=False):
    """Why a response failed: ``code`` is OpenAI's class of it; Iris's own code is in ``message``."""

    code: Literal["server_error", "rate_limit_exceeded"]
    message: str


class IncompleteDetails(OpenAIStruct, omit_defaults=False):
    reason: Literal["max_output_tokens", "content_filter"]


class ReasoningEcho(OpenAIStruct, omit_defaults=False):
    effort: str | None = None
    summary: str | None = None


class TextEcho(OpenAIStruct, omit_defaults=False):
    format: TextFormat


Status = Literal["completed", "failed", "in_progress", "incomplete"]


class ResponseObject(OpenAIStruct, tag="response", tag_field="object", omit_defaults=False):
    """A response: what was asked (echoed) and what the model answered (``output``)."""

    id: str
    created_at: int
    status: Status
    model: str
    output: list[OutputItem]
    parallel_tool_calls: bool
    tool_choice: ToolChoiceIn
    tools: list[dict[str, Any]]
    text: TextEcho
    reasoning: ReasoningEcho
    store: bool
    truncation: Literal["disabled"] = "disabled"
    completed_at: int | None = None
    error: ResponseErrorBody | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | None = None
    max_output_tokens: int | None = None
    previous_response_id: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    user: str | None = None
    metadata: dict[str, str] = msgspec.field(default_factory=dict)
    usage: ResponseUsage | None = None


class DeletedResponse(OpenAIStruct, tag="response", tag_field="object", omit_defaults=False):
    id: str
    deleted: bool = True


class InputItemList(OpenAIStruct, tag="list", tag_field="object", omit_defaults=False):
    """A page of a stored response's input items (each as it was stored, with its ``id``)."""

    data: list[dict[str, Any]]
    first_id: str | None
    last_id: str | None
    has_more: bool


ROOTS = (ResponsesRequest, ResponseObject, InputItemList, DeletedResponse)
"""The Responses API's component schemas in the OpenAPI document."""
