"""A session's active path as the AI SDK's ``UIMessage[]`` (``GET /api/agents/{slug}/ui-chat/{id}/messages``):
the chat surface's messages (fresh signed URLs) regrouped the way ``useChat`` holds them. A user row is
one user message; the assistant and tool rows that answer it are one assistant message, whose id is the
id of the run that began the answer (its stream's ``start`` said the same), with a ``step-start`` per
model turn, ``reasoning`` and ``text`` parts, a ``dynamic-tool`` part per call (its output, error or
denial from the tool row) and a ``file`` part per image a tool returned."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from iris.app.persistence.models import Message
from iris.app.schemas.chat import (
    AudioPartOut,
    ChatMessageOut,
    DocumentPartOut,
    ImagePartOut,
    ReasoningPartOut,
)
from iris.app.schemas.history import TextPartOut
from iris.app.schemas.ui_chat import UiMessageOut


def ui_messages(
    rows: Sequence[Message],
    messages: Sequence[ChatMessageOut],
    run_ids: Mapping[UUID, str],
    *,
    running: UUID | None,
) -> list[UiMessageOut]:
    """``messages`` (one per row of ``rows``) as ``UIMessage``s; the answer of the ``running`` run is left
    out (the stream endpoint replays all of it)."""
    out: list[UiMessageOut] = []
    answer: UiMessageOut | None = None
    for row, message in zip(rows, messages, strict=True):
        if running is not None and row.run_id == running and message.role != "user":
            continue
        if message.role in ("user", "system"):
            answer = None
            parts = [_part(p) for p in message.parts]
            out.append(UiMessageOut(id=message.id, role=message.role, parts=parts))
            continue
        if answer is None:
            answer_id = run_ids.get(row.run_id) if row.run_id is not None else None
            answer = UiMessageOut(id=answer_id or message.id, role="assistant", parts=[])
            out.append(answer)
        if message.role == "assistant":
            _assistant(answer, message)
        else:
            _tool(answer, message)
    return out


def _part(part: object) -> dict[str, Any]:
    if isinstance(part, ImagePartOut):
        return {"type": "file", "mediaType": part.mime_type, "url": part.image, "filename": part.name}
    if isinstance(part, DocumentPartOut):
        return {"type": "file", "mediaType": part.mime_type, "url": part.document, "filename": part.name}
    if isinstance(part, AudioPartOut):
        return {"type": "file", "mediaType": part.mime_type, "url": part.audio, "filename": part.name}
    return {"type": "text", "text": getattr(part, "text", "")}


def _assistant(answer: UiMessageOut, message: ChatMessageOut) -> None:
    answer.parts.append({"type": "step-start"})
    for part in message.parts:
        if isinstance(part, ReasoningPartOut):
            answer.parts.append({"type": "reasoning", "text": part.text, "state": "done"})
        elif isinstance(part, TextPartOut) and part.text:
            answer.parts.append({"type": "text", "text": part.text, "state": "done"})
    for call in message.tool_calls or ():
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            arguments = call.arguments
        answer.parts.append(
            {
                "type": "dynamic-tool",
                "toolName": call.name,
                "toolCallId": call.id,
                "state": "input-available",
                "input": arguments,
            }
        )
    if message.usage is not None:
        answer.metadata = {"usage": [message.usage]}


def _tool(answer: UiMessageOut, message: ChatMessageOut) -> None:
    output = message.tool_output or {}
    call = next(
        (p for p in answer.parts if p.get("toolCallId") == message.tool_call_id),
        None,
    )
    if call is None:
        return
    status = output.get("status")
    if status == "cancelled":
        call.update(state="output-denied", approval={"id": call["toolCallId"], "approved": False})
    elif status == "failed":
        call.update(state="output-error", errorText=str(output.get("error") or "The tool failed."))
    else:
        call.update(state="output-available", output=output)
    for part in message.parts:
        if isinstance(part, ImagePartOut):
            answer.parts.append({"type": "file", "mediaType": part.mime_type, "url": part.image})
