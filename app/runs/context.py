"""The model's view of a thread: stored messages → neutral provider messages.

The database is authoritative (SPEC §6): the client's copy of earlier turns is never used. Stored
images are re-resolved from their canonical parts and delivered per the model's capabilities
(normalised, inline or by fresh signed URL). When a thread holds more images than the model takes in
one request, the newest are kept and older ones become a short text note.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.media.pipeline import ImageDelivery, ImageRef
from app.persistence.models import Message as MessageRow
from app.runs.parts import image_parts
from providers import Capabilities, ImagePart, Message, TextPart, ToolCallPart, ToolResultPart
from providers.messages import Part


def thread_images(history: Sequence[MessageRow]) -> list[dict[str, Any]]:
    """Every image of the thread's user messages, oldest first (what ``image_info`` counts)."""
    return [part for row in history if row.role == "user" for part in image_parts(row.parts)]


async def model_messages(
    history: Sequence[MessageRow], delivery: ImageDelivery, caps: Capabilities, *, by_url: bool
) -> list[Message]:
    """The thread as the model receives it."""
    images = thread_images(history)
    keep = caps.max_images if caps.vision else 0
    kept = images[len(images) - keep :] if keep else []
    delivered = await delivery.parts([_ref(p) for p in kept], caps, by_url=by_url) if kept else []
    by_id = {id(part): image for part, image in zip(kept, delivered, strict=True)}

    out: list[Message] = []
    for row in history:
        if row.role == "user":
            out.append(Message(role="user", parts=tuple(_user_parts(row, by_id))))
        elif row.role == "assistant":
            parts: list[Part] = [TextPart(text=row.content)] if row.content else []
            parts += [
                ToolCallPart(id=p["id"], name=p["name"], arguments=p["arguments"])
                for p in row.parts or ()
                if p.get("type") == "tool_call"
            ]
            if parts:
                out.append(Message(role="assistant", parts=tuple(parts)))
        elif row.role == "tool":
            out.append(Message(role="tool", parts=(tool_result(row.meta.get("tool_agent_output", {})),)))
    return out


def tool_result(output: Mapping[str, Any]) -> ToolResultPart:
    """What the model is told a tool returned: the full result as JSON, or the error."""
    failed = output.get("status") != "succeeded"
    content = str(output.get("error", "the tool failed")) if failed else json.dumps(output.get("result"))
    return ToolResultPart(
        tool_call_id=str(output.get("toolCallId", "")),
        name=str(output.get("toolName", "")),
        content=content,
        is_error=failed,
    )


def _user_parts(row: MessageRow, delivered: Mapping[int, ImagePart]) -> list[Part]:
    if row.parts is None:  # a legacy row: text only
        return [TextPart(text=row.content)]
    parts: list[Part] = []
    for part in row.parts:
        if part.get("type") == "text":
            parts.append(TextPart(text=str(part.get("text", ""))))
        elif part.get("type") == "image":
            image = delivered.get(id(part))
            if image is not None:
                parts.append(image)
            else:
                parts.append(TextPart(text=f"[earlier image omitted: {part.get('name') or 'unnamed'}]"))
    return parts


def _ref(part: Mapping[str, Any]) -> ImageRef:
    return ImageRef(
        path=str(part["path"]),
        mime_type=str(part["mimeType"]),
        sha256=str(part["sha256"]),
        name=str(part.get("name", "")),
    )
