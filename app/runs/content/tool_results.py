"""A tool's stored output as the model is told it: text, and the images it returned placed the way the
model's vendor takes them (``Capabilities.tool_result_images``).

``native`` (Anthropic, Gemini 3, the local model): the images ride inside the tool result. Otherwise
(Chat Completions, Ollama, LiteLLM, plugins that declare nothing): the tool message says which images
it returned, and a user message right after the results carries them, as pydantic-ai does. A model
that cannot see images is told they were left out; audio and files are named, never sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from iris.providers import Capabilities, ImagePart, Message, TextPart, ToolResultPart
from iris.providers.messages import Part

FAILED = "the tool failed"


def declined_summary(name: str, reason: str | None = None) -> str:
    """A call the user declined, as the model and the user read it: not a failure of the tool; the
    user's reason when they gave one."""
    said = f"The user declined this call; {name} was not run."
    return f"{said} Their reason: {reason}" if reason else said


def image_parts_of(output: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The images of a tool's output (what the model may see), oldest first: stored ones, and those a
    gateway client returned inline (``data``, held for its request only)."""
    if output.get("status") != "succeeded":
        return []
    return [
        p
        for p in output.get("content") or ()
        if p.get("type") == "image" and (p.get("path") or isinstance(p.get("data"), bytes))
    ]


def model_text(output: Mapping[str, Any]) -> str:
    """What the model reads: the error; for a call that was not run (the user declined it, or the run
    was cancelled) why not; or each part as text (images by number), else the structured result as
    JSON (the built-in tools' only answer)."""
    status = output.get("status")
    if status == "cancelled":
        return str(output.get("error") or output.get("resultSummary") or "the call was cancelled")
    if status != "succeeded":
        return str(output.get("error") or FAILED)
    content = output.get("content") or []
    if not content:
        return json.dumps(output.get("result"))
    lines: list[str] = []
    images = 0
    for part in content:
        kind = part.get("type")
        if kind == "text":
            lines.append(str(part.get("text", "")))
        elif kind == "json":
            lines.append(json.dumps(part.get("value")))
        elif kind == "image":
            images += 1
            lines.append(
                f"[image {images}: {part.get('mimeType')}, {part.get('width')}x{part.get('height')}]"
            )
        elif kind == "audio":
            lines.append(
                f"[audio clip: {part.get('mimeType')}, {part.get('size')} bytes (not sent to the model)]"
            )
        elif kind == "resource_link":
            described = f" - {part['description']}" if part.get("description") else ""
            lines.append(f"[link: {part.get('name')} <{part.get('uri')}>{described}]")
        elif kind == "resource" and part.get("path"):
            lines.append(f"[file {part.get('uri')}: {part.get('mimeType')}, {part.get('size')} bytes]")
        elif kind == "resource":
            lines.append(f"[resource {part.get('uri')}]\n{part.get('text', '')}")
    structured = output.get("result")
    if structured is not None and not any(p.get("type") in ("text", "json") for p in content):
        lines.append(json.dumps(structured))
    return "\n".join(lines)


def result_part(output: Mapping[str, Any], images: Sequence[ImagePart | str] = ()) -> ToolResultPart:
    """The model's view of one output; ``images`` are its delivered images, or a note for each one
    that could not be sent (over the request's image budget)."""
    notes = [note for note in images if isinstance(note, str)]
    text = model_text(output)
    return ToolResultPart(
        tool_call_id=str(output.get("toolCallId", "")),
        name=str(output.get("toolName", "")),
        content="\n".join([text, *notes]) if notes else text,
        is_error=output.get("status") == "failed",  # a declined call is the user's answer, not an error
        images=tuple(image for image in images if isinstance(image, ImagePart)),
    )


def place_images(messages: Sequence[Message], caps: Capabilities) -> list[Message]:
    """Tool results' images where this model takes them (see the module docstring)."""
    if caps.vision and caps.tool_result_images == "native":
        return list(messages)
    out: list[Message] = []
    waiting: list[Part] = []
    for message in messages:
        if message.role != "tool" and waiting:
            out.append(Message(role="user", parts=tuple(waiting)))
            waiting = []
        if message.role != "tool" or not any(
            isinstance(p, ToolResultPart) and p.images for p in message.parts
        ):
            out.append(message)
            continue
        parts: list[Part] = []
        for part in message.parts:
            if not isinstance(part, ToolResultPart) or not part.images:
                parts.append(part)
                continue
            count = len(part.images)
            if caps.vision:
                note = f"[{count} image(s) of this result follow in the next message]"
                waiting.append(
                    TextPart(text=f"The image(s) {part.name} returned (call {part.tool_call_id}):")
                )
                waiting.extend(part.images)
            else:
                note = f"[{count} image(s) left out: this model cannot see images]"
            parts.append(
                ToolResultPart(
                    tool_call_id=part.tool_call_id,
                    name=part.name,
                    content=f"{part.content}\n{note}" if part.content else note,
                    is_error=part.is_error,
                )
            )
        out.append(Message(role="tool", parts=tuple(parts)))
    if waiting:
        out.append(Message(role="user", parts=tuple(waiting)))
    return out
