"""The shapes the document declares beyond what Litestar infers: what the hand parsers accept in
request fields typed as dicts, and the ``iris/…`` metadata objects events carry."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from iris.app.agui.events import (
    Custom,
    Interrupt,
    RunError,
    RunFinished,
    RunStarted,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
)
from iris.app.agui.input import RunAgentInput
from iris.app.api.openai.wire import FileData
from iris.app.api.openapi.ui_chunks import UiAssistantMessageIn, UiUserMessageIn
from iris.app.catalogue.agents import SLUG
from iris.app.runs import (
    AGENT_KEY,
    ATTEMPTS_KEY,
    IGNORED_RESUME_KEY,
    MODEL_KEY,
    TOOL_CALL_KEY,
    TOOL_OUTPUT_KEY,
    TRACE_ID_KEY,
    TRACEPARENT_KEY,
    USAGE_KEY,
    USER_MESSAGE_KEY,
    WORKER_OUTPUT_KEY,
    Attempt,
    BillableUsage,
    ToolAgentOutput,
    WorkerAgentOutput,
)
from iris.app.schemas.agents import AgentCreate, AgentRef, AgentUpdate
from iris.app.schemas.api_keys import ApiKeyCreate, ApiKeyLimits
from iris.app.schemas.catalogue import ModelCreate, ModelUpdate
from iris.app.schemas.chat import ChatRequest, LlmChatRequest, LlmMessageIn
from iris.app.schemas.mcp import HttpServerCreate, McpServerUpdate, StdioServerCreate
from iris.app.schemas.session_export import ExportMessage, SessionExport
from iris.app.schemas.sessions import ActiveMessageIn, SessionUpdate
from iris.app.schemas.ui_chat import UiChatRequest
from iris.app.threads import CLIENT_ID_PATTERN, THREAD_ID_PATTERN
from iris.providers.wire import WireStruct

# ---------------------------------------------------------------------------------------------
# Inbound shapes the parsers accept (AG-UI 1.0 names). Unknown roles and part types are skipped by
# the server, and refused part kinds (image_url, audio, …) are 422s, so neither is listed.


class TextInputContent(WireStruct, tag_field="type", tag="text"):
    text: str


class InputContentUrlSource(WireStruct, tag_field="type", tag="url", kw_only=True):
    """A signed URL of this deployment's storage (``POST /api/files`` answers one)."""

    value: str
    mime_type: str | None = None


class InputContentDataSource(WireStruct, tag_field="type", tag="data", kw_only=True):
    """The file itself, as standard base64 (documents and audio only): checked like an upload (sniffed;
    ``mimeType`` must be what the bytes are; the upload limits) and stored as an upload of the thread."""

    value: str
    mime_type: str


class ImageInputMetadata(WireStruct, kw_only=True):
    """Open: other keys are allowed and ignored."""

    filename: str | None = None


class ImageInputContent(WireStruct, tag_field="type", tag="image", kw_only=True):
    """An image: a signed URL only (inline ``data`` is 422 ``inline_data_unsupported``: upload first)."""

    source: InputContentUrlSource
    metadata: ImageInputMetadata | None = None


class DocumentInputContent(WireStruct, tag_field="type", tag="document", kw_only=True):
    """A PDF: a signed URL of an upload, or its bytes (``mimeType`` ``application/pdf``)."""

    source: InputContentUrlSource | InputContentDataSource
    metadata: ImageInputMetadata | None = None


class AudioInputContent(WireStruct, tag_field="type", tag="audio", kw_only=True):
    """A WAV or MP3 clip: a signed URL of an upload, or its bytes (``audio/wav``, ``audio/mpeg``)."""

    source: InputContentUrlSource | InputContentDataSource
    metadata: ImageInputMetadata | None = None


class BinaryInputContent(WireStruct, tag_field="type", tag="binary", kw_only=True):
    """Seed 000's block: an upload ``id`` or a signed ``url``; inline ``data`` (base64) for PDFs and
    audio only (for an image it is 422 ``inline_data_unsupported``)."""

    mime_type: Literal["image/png", "image/jpeg", "image/webp", "application/pdf", "audio/wav", "audio/mpeg"]
    id: str | None = None
    url: str | None = None
    data: str | None = None
    filename: str | None = None


InputContent = (
    TextInputContent | ImageInputContent | DocumentInputContent | AudioInputContent | BinaryInputContent
)


ClientId = Annotated[str, msgspec.Meta(pattern=CLIENT_ID_PATTERN)]
"""A run's or a message's id as the intake checks it (422 ``invalid_id`` otherwise)."""

AgentSlug = Annotated[str, msgspec.Meta(pattern=f"^{SLUG.pattern}$")]
"""A new agent's slug as ``check_slug`` accepts it (422 ``invalid_agent_slug`` otherwise)."""


class FunctionCall(WireStruct):
    name: str
    arguments: str


class ToolCall(WireStruct, kw_only=True):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class DeveloperMessage(WireStruct, tag_field="role", tag="developer"):
    id: ClientId
    content: str


class SystemMessage(WireStruct, tag_field="role", tag="system"):
    id: ClientId
    content: str


class AssistantMessage(WireStruct, tag_field="role", tag="assistant", kw_only=True):
    id: ClientId
    content: str | None = None
    tool_calls: list[ToolCall] | None = None


class UserMessage(WireStruct, tag_field="role", tag="user"):
    id: ClientId
    content: str | list[InputContent]


class ToolMessage(WireStruct, tag_field="role", tag="tool", kw_only=True):
    """A frontend tool's result; only text parts of a list ``content`` are read."""

    id: ClientId
    content: str | list[TextInputContent]
    tool_call_id: str
    error: str | None = None


Message = DeveloperMessage | SystemMessage | AssistantMessage | UserMessage | ToolMessage


class ForwardedProps(WireStruct, kw_only=True):
    """The ``forwardedProps`` keys Iris reads; others are allowed and ignored."""

    model_id: str | None = None
    """A catalogue model (its id or ``provider/modelId``); default: the thread's, then the agent's."""
    agent: str | None = None
    """An agent slug, for a new thread (default: the default agent); an existing thread keeps its own
    (another slug is 409 ``thread_agent_mismatch``)."""
    enable_tools: bool | None = None
    """``false`` offers the model no tools."""


class ChatImagePartIn(WireStruct, tag_field="type", tag="image", kw_only=True):
    """Seed 002's image part: ``image`` is a signed URL from ``POST /api/files``."""

    image: str
    mime_type: Literal["image/png", "image/jpeg", "image/webp"]
    name: str | None = None


ChatPart = TextInputContent | ChatImagePartIn

ThreadId = Annotated[str, msgspec.Meta(pattern=THREAD_ID_PATTERN)]
"""A thread id as ``check_thread_id`` accepts it (422 ``invalid_thread_id`` otherwise)."""

SHARPER: dict[type[msgspec.Struct], dict[str, Any]] = {
    RunAgentInput: {
        "messages": list[Message],
        "forwardedProps": ForwardedProps | None,
        "threadId": ThreadId,
        "runId": ClientId,
    },
    AgentCreate: {"slug": AgentSlug},
    ChatRequest: {"parts": list[ChatPart] | None, "sessionId": ThreadId | None},
    LlmChatRequest: {"parts": list[ChatPart] | None},
    UiChatRequest: {
        "id": ThreadId,
        "messages": Annotated[list[UiUserMessageIn | UiAssistantMessageIn], msgspec.Meta(min_length=1)],
    },
    LlmMessageIn: {"content": str | list[ChatPart]},
    SessionExport: {},
    ExportMessage: {
        "id": ClientId,
        "workerAgentOutput": WorkerAgentOutput | None,
        "toolAgentOutput": ToolAgentOutput | None,
    },
}
"""Request struct → wire field → the type the hand parser actually accepts there (or the stricter shape a
route's own check gives the field, with its own code)."""


def _given(name: str, schema: dict[str, Any], **others: dict[str, Any]) -> dict[str, Any]:
    """An object that has ``name`` (matching ``schema``), and whose fields ``others`` match theirs."""
    return {"type": "object", "required": [name], "properties": {name: schema, **others}}


_STRING = {"type": "string"}
_SOME = {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/JsonValue"}}
_TRUE = {"const": True}
_INLINE_KINDS = ["application/pdf", "audio/wav", "audio/mpeg"]

COMPONENT_RULES: dict[type[msgspec.Struct], dict[str, Any]] = {
    BinaryInputContent: {
        "anyOf": [
            _given("data", _STRING, mimeType={"type": "string", "enum": _INLINE_KINDS}),
            _given("url", _STRING, data={"type": "null"}),
            _given("id", _STRING, data={"type": "null"}),
        ]
    },
    ChatRequest: {
        "allOf": [
            {
                "type": "object",
                "not": {"allOf": [_given("editMessageId", _STRING), _given("regenerate", _TRUE)]},
            },
            {"type": "object", "not": {"allOf": [_given("resume", _SOME), _given("editMessageId", _STRING)]}},
            {"type": "object", "not": {"allOf": [_given("resume", _SOME), _given("regenerate", _TRUE)]}},
        ]
    },
    LlmChatRequest: {
        "anyOf": [_given("parts", _SOME), _given("content", {"type": "string", "minLength": 1})]
    },
    FileData: {"anyOf": [_given("file_data", _STRING)]},  # a file_id is refused (file_source_unsupported)
    AgentCreate: {
        "anyOf": [
            _given("models", {"type": "array", "minItems": 1, "items": _STRING}),
            _given("defaultModel", _STRING),
        ]
    },
}
"""Rules across a body's fields that a route checks itself, stated in the component as JSON Schema: a
binary part names its file one way (inline ``data`` not for images), a chat request asks for one thing
(an edit, a regeneration or a resume), a stateless chat sends a new message (``empty_message``), a
``/v1`` file part is ``file_data``, an agent offers at least one model."""

REQUEST_BODIES: tuple[type[msgspec.Struct], ...] = (
    AgentUpdate,
    ModelCreate,
    ModelUpdate,
    HttpServerCreate,
    StdioServerCreate,
    McpServerUpdate,
    SessionUpdate,
    ActiveMessageIn,
    UiChatRequest,
    ApiKeyCreate,
    ApiKeyLimits,
)
"""The other JSON request bodies: documented as msgspec states them (every ``Meta`` constraint, unknown
fields refused), not as Litestar infers them."""

# ---------------------------------------------------------------------------------------------
# The ``iris/…`` metadata objects events carry (open: AG-UI metadata may hold anything else).


class EventMetadata(msgspec.Struct):
    """Open event metadata; Iris sets none on this event."""


class RunStartedMetadata(
    msgspec.Struct,
    rename={
        "ignored_resume_entries": IGNORED_RESUME_KEY,
        "user_message_id": USER_MESSAGE_KEY,
        "trace_id": TRACE_ID_KEY,
        "traceparent": TRACEPARENT_KEY,
        "agent": AGENT_KEY,
        "model": MODEL_KEY,
        "attempts": ATTEMPTS_KEY,
    },
    kw_only=True,
):
    ignored_resume_entries: list[str] | None = None
    """Resume entries that answered no open interrupt (their interrupt ids)."""
    user_message_id: str | None = None
    """The id history shows for the user message this run answers (``editMessageId`` takes it)."""
    trace_id: str | None = None
    """With tracing on: the trace id of the run's spans (32 hex digits), as in its log lines."""
    traceparent: str | None = None
    """With tracing on: the run's ``invoke_agent`` span as a W3C ``traceparent``."""
    agent: AgentRef | None = None
    """The agent and the version of it this run uses (stays in the run's log after the agent changes)."""
    model: str | None = None
    """The model the run starts on (``provider/modelId``): the one asked for, or its first fallback
    not cooled down."""
    attempts: list[Attempt] | None = None
    """When the run starts on a fallback: the models skipped because they are cooling down (code
    ``model_cooling_down``), in order; absent otherwise."""


class RunFinishedMetadata(
    msgspec.Struct,
    rename={"usage": USAGE_KEY, "model": MODEL_KEY, "attempts": ATTEMPTS_KEY},
    kw_only=True,
):
    usage: BillableUsage | None = None
    """The run's usage, billed to the model that answered."""
    model: str | None = None
    """The model that answered (``provider/modelId``): the one asked for, or a fallback."""
    attempts: list[Attempt] | None = None
    """The requests that failed before the answer (retried, or moved on from) and the models skipped
    while cooled down (code ``model_cooling_down``), in order; absent when there were none."""


class RunErrorMetadata(msgspec.Struct, rename={"model": MODEL_KEY, "attempts": ATTEMPTS_KEY}, kw_only=True):
    model: str | None = None
    """The last model the run tried (``provider/modelId``)."""
    attempts: list[Attempt] | None = None
    """The requests that failed (the last one included, when retryable) and the models skipped while
    cooled down, in order."""


class TextMessageEndMetadata(msgspec.Struct, rename={"worker_agent_output": WORKER_OUTPUT_KEY}, kw_only=True):
    worker_agent_output: WorkerAgentOutput | None = None


class ToolCallResultMetadata(msgspec.Struct, rename={"tool_agent_output": TOOL_OUTPUT_KEY}, kw_only=True):
    tool_agent_output: ToolAgentOutput | None = None


class InterruptToolCall(WireStruct):
    """The tool call an approval interrupt asks about."""

    name: str
    arguments: str


class InterruptMetadata(msgspec.Struct, rename={"tool_call": TOOL_CALL_KEY}, kw_only=True):
    tool_call: InterruptToolCall | None = None


EVENT_METADATA: dict[type[msgspec.Struct], type[msgspec.Struct]] = {
    RunStarted: RunStartedMetadata,
    RunFinished: RunFinishedMetadata,
    RunError: RunErrorMetadata,
    TextMessageStart: EventMetadata,
    TextMessageContent: EventMetadata,
    TextMessageEnd: TextMessageEndMetadata,
    ToolCallStart: EventMetadata,
    ToolCallArgs: EventMetadata,
    ToolCallEnd: EventMetadata,
    ToolCallResult: ToolCallResultMetadata,
    Custom: EventMetadata,
    Interrupt: InterruptMetadata,
}

OPEN = (
    ForwardedProps,
    ImageInputMetadata,
    EventMetadata,
    RunStartedMetadata,
    TextMessageEndMetadata,
    ToolCallResultMetadata,
    InterruptMetadata,
)
"""Objects that allow keys beyond the listed ones (any JSON value)."""
