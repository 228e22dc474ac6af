"""The AI SDK's shapes: its UI message stream chunks (protocol v1) as JSON Schema, what each ``data:``
line of ``/api/agents/{slug}/ui-chat`` holds (written from the chunk types the ``ai`` package's own
``uiMessageChunkSchema`` accepts, for the chunks Iris sends), and the ``UIMessage`` the request carries."""

from __future__ import annotations

from typing import Any

from iris.providers.wire import WireStruct

UI_CHUNK = "UiMessageChunk"

_S = {"type": "string"}
_B = {"type": "boolean"}
_ANY = {"$ref": "#/components/schemas/JsonValue"}
_FINISH = {"enum": ["stop", "length", "content-filter", "tool-calls", "error", "other"]}
_TOOL = {"toolCallId": _S, "toolName": _S}

_CHUNKS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "start": ({}, {"messageId": _S}, "The answer begins; `messageId` is its id (the run's)."),
    "start-step": ({}, {}, "A model turn begins."),
    "finish-step": ({}, {}, "A model turn ends (after its tools' outputs)."),
    "text-start": ({"id": _S}, {}, "A text part begins."),
    "text-delta": ({"id": _S, "delta": _S}, {}, "More of a text part."),
    "text-end": ({"id": _S}, {}, "A text part ends."),
    "reasoning-start": ({"id": _S}, {}, "What the model thinks begins."),
    "reasoning-delta": ({"id": _S, "delta": _S}, {}, "More of it."),
    "reasoning-end": ({"id": _S}, {}, "It ends."),
    "tool-input-start": (_TOOL, {"dynamic": _B}, "A server tool call begins."),
    "tool-input-delta": ({"toolCallId": _S, "inputTextDelta": _S}, {}, "More of its JSON arguments."),
    "tool-input-available": ({**_TOOL, "input": _ANY}, {"dynamic": _B}, "Its arguments, parsed."),
    "tool-input-error": ({**_TOOL, "input": _ANY, "errorText": _S}, {"dynamic": _B}, "Arguments not JSON."),
    "tool-approval-request": (
        {"approvalId": _S, "toolCallId": _S},
        {"reason": _S},
        "The call waits for the user: answer in the tool part (`approval-responded`).",
    ),
    "tool-output-available": ({"toolCallId": _S, "output": _ANY}, {"dynamic": _B}, "What the tool returned."),
    "tool-output-error": ({"toolCallId": _S, "errorText": _S}, {"dynamic": _B}, "The tool failed."),
    "tool-output-denied": ({"toolCallId": _S}, {}, "The user declined the call; it did not run."),
    "file": ({"url": _S, "mediaType": _S}, {}, "An image a tool returned, its URL signed."),
    "data-model": ({"data": _S}, {"id": _S}, "The model answering (`provider/modelId`)."),
    "data-usage": ({"data": _ANY}, {"id": _S}, "A model turn's token usage."),
    "data-fallbacks": ({"data": _ANY}, {"id": _S}, "The models tried before this one."),
    "data-notices": ({"data": _ANY}, {"id": _S}, "What happened to attachments (a PDF read as text, …)."),
    "data-interrupt": ({"data": _ANY}, {"id": _S}, "An interrupt other than a tool approval."),
    "finish": (
        {},
        {"finishReason": _FINISH, "messageMetadata": _ANY},
        "The answer ends; `messageMetadata` holds `usage` (per model) and `model`.",
    ),
    "abort": ({}, {"reason": _S}, "The run was cancelled."),
    "error": ({"errorText": _S}, {}, "The run failed after the stream began: the last chunk."),
}


def ui_chunk_schemas() -> dict[str, Any]:
    """``UiMessageChunk`` (one of every chunk) and a schema per chunk type, for the components."""
    out: dict[str, Any] = {}
    for kind, (required, optional, description) in _CHUNKS.items():
        name = "UiChunk" + "".join(word.capitalize() for word in kind.split("-"))
        out[name] = {
            "type": "object",
            "description": description,
            "properties": {"type": {"const": kind}, **required, **optional},
            "required": ["type", *required],
        }
    out[UI_CHUNK] = {
        "description": "One chunk of the AI SDK's UI message stream (v1): the JSON of one `data:` line "
        "(the stream ends with `data: [DONE]`).",
        "oneOf": [{"$ref": f"#/components/schemas/{name}"} for name in out],
        "discriminator": {"propertyName": "type"},
    }
    return out


class UiTextPartIn(WireStruct, tag_field="type", tag="text", kw_only=True):
    """Text the user wrote."""

    text: str


class UiFilePartIn(WireStruct, tag_field="type", tag="file", kw_only=True):
    """A file: ``url`` is a ``data:`` URL (base64) or the signed URL of an upload of this chat."""

    url: str
    media_type: str
    filename: str | None = None


class UiUserMessageIn(WireStruct, tag_field="role", tag="user", kw_only=True):
    """The new user message, as ``DefaultChatTransport`` sends it (the client's ``id`` is not kept)."""

    id: str
    parts: list[UiTextPartIn | UiFilePartIn]


class UiAssistantMessageIn(WireStruct, tag_field="role", tag="assistant", kw_only=True):
    """An answer sent back with approvals answered: each tool part in ``approval-responded`` state
    (``approval: {id, approved, reason?}``) answers the interrupt ``approval.id``; other parts are the
    client's copy and not read."""

    id: str
    parts: list[dict[str, Any]]


UiMessageIn = UiUserMessageIn | UiAssistantMessageIn
