"""The model's view of a thread: stored messages → neutral provider messages.

The database is authoritative (SPEC §6): the client's copy of earlier turns is never used. Stored
images are re-resolved from their canonical parts and delivered per the model's capabilities
(normalised, inline or by fresh signed URL). When a thread holds more images than the model takes in
one request, the newest are kept and older ones become a short text note. Documents and audio are
read from storage and sent natively, as their text, or left out with a note
(:mod:`iris.app.runs.content.attachments`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any

import msgspec

from iris.app.media.pipeline import ImageDelivery, ImageRef, check_request_size, delivers_by_url, image_budget
from iris.app.persistence.models import Message as MessageRow
from iris.app.runs.content.attachments import (
    DEFAULT_PAGE_RENDERING,
    PageRendering,
    deleted_note,
    model_attachments,
    native_bytes,
)
from iris.app.runs.content.parts import image_parts
from iris.app.runs.content.reasoning import reasoning_from_stored
from iris.app.runs.content.tool_results import image_parts_of, model_text, place_images, result_part
from iris.providers import Capabilities, ImagePart, Message, TextPart, ToolCallPart, ToolResultPart, ToolSpec
from iris.providers.messages import Part


def thread_images(history: Sequence[MessageRow], deleted: Set[str] = frozenset()) -> list[dict[str, Any]]:
    """Every image of the thread's user messages that still exists, oldest first (what tools see)."""
    return [
        part
        for row in history
        if row.role == "user"
        for part in image_parts(row.parts)
        if part.get("uploadId") not in deleted
    ]


def _model_images(history: Sequence[MessageRow], deleted: Set[str]) -> list[Mapping[str, Any]]:
    """Every image the model could be shown, in thread order: users' and those tools returned."""
    out: list[Mapping[str, Any]] = []
    for row in history:
        if row.role == "user":
            out += image_parts(row.parts)
        elif row.role == "tool" and "tool_agent_output" in row.meta:
            out += image_parts_of(row.meta["tool_agent_output"])
    return [part for part in out if part.get("uploadId") not in deleted]


def sent_images(
    history: Sequence[MessageRow], caps: Capabilities, deleted: Set[str] = frozenset()
) -> list[Mapping[str, Any]]:
    """The images a request carries: the thread's newest ``maxImages``, users' and tools' together
    (older ones become notes)."""
    images = _model_images(history, deleted)
    keep = caps.max_images if caps.vision else 0
    return images[max(len(images) - keep, 0) :] if keep else []


def reserved_bytes(
    history: Sequence[MessageRow], system: str | None, tools: Sequence[ToolSpec], caps: Capabilities
) -> int:
    """What a request spends on everything but its images: the thread's text, tool calls and results,
    the system prompt and the tool definitions (UTF-8 bytes, before JSON escaping), and the documents
    and audio this model gets natively (base64)."""
    text = sum(len(_told(row).encode()) for row in history)
    calls = sum(
        len(str(p.get("arguments", "")).encode())
        for row in history
        if row.role == "assistant"
        for p in row.parts or ()
        if p.get("type") == "tool_call"
    )
    told = text + calls + len((system or "").encode()) + len(msgspec.json.encode(list(tools)))
    return told + native_bytes(history, caps)


def check_request_fits(
    caps: Capabilities,
    history: Sequence[MessageRow],
    system: str | None,
    tools: Sequence[ToolSpec],
    *,
    deleted: Set[str] = frozenset(),
    storage_publicly_reachable: bool,
    model_ref: str,
) -> None:
    """422 ``request_too_large`` before any I/O when this thread cannot fit the model's request limit:
    its text, documents and audio, and its inline images (none when they go by URL) downscaled."""
    inline = not delivers_by_url(caps, storage_publicly_reachable=storage_publicly_reachable)
    check_request_size(
        caps,
        reserved_bytes(history, system, tools, caps),
        len(sent_images(history, caps, deleted)) if inline else 0,
        model_ref=model_ref,
    )


def _told(row: MessageRow) -> str:
    """A row's text as the model gets it (a tool's whole output, not its one-line summary)."""
    output = row.meta.get("tool_agent_output") if row.role == "tool" else None
    return model_text(output) if output is not None else row.content


async def model_messages(
    history: Sequence[MessageRow],
    delivery: ImageDelivery,
    caps: Capabilities,
    *,
    by_url: bool,
    deleted: Set[str] = frozenset(),
    with_tools: bool = True,
    reserved_bytes: int = 0,
    rendering: PageRendering = DEFAULT_PAGE_RENDERING,
) -> list[Message]:
    """The thread as the model receives it. Deleted images become a note; a tool call that never got
    an answer gets an error result, since vendors refuse a call without one. When this run offers no
    tools (``with_tools`` false), earlier tool calls and results are told as text in the assistant's
    turn, since vendors also refuse tool blocks in a request that defines no tools. Inline images are
    made to fit the vendor's whole-request limit beside ``reserved_bytes`` of everything else."""
    kept = sent_images(history, caps, deleted)
    budget = image_budget(caps, reserved_bytes)
    # Tools' images always go inline (function responses take no URLs); both sets share the budget.
    from_tools = {
        id(p)
        for row in history
        if row.role == "tool"
        for p in image_parts_of(row.meta.get("tool_agent_output") or {})
    }
    by_id: dict[int, ImagePart] = {}
    for inline, group in (
        (False, [p for p in kept if id(p) in from_tools]),
        (by_url, [p for p in kept if id(p) not in from_tools]),
    ):
        if group:
            share = None if budget is None else budget * len(group) // len(kept)
            delivered = await delivery.parts([image_ref(p) for p in group], caps, by_url=inline, budget=share)
            by_id |= {id(part): image for part, image in zip(group, delivered, strict=True)}
    room = max(caps.max_images - len(kept), 0) if caps.vision else 0
    attachments = await model_attachments(
        history, delivery.cache.storage, caps, frozenset(deleted), rendering, request_room=room
    )

    out: list[Message] = []
    unanswered: dict[str, str] = {}
    for row in history:
        if row.role != "tool" and unanswered:
            out.append(_no_answers(unanswered))
        if row.role == "user":
            out.append(Message(role="user", parts=tuple(_user_parts(row, by_id, deleted, attachments))))
        elif row.role == "assistant":
            # Stored reasoning goes back to the vendor that made it (each provider keeps only its own).
            parts: list[Part] = [
                reasoning_from_stored(p) for p in row.parts or () if p.get("type") == "reasoning"
            ]
            if row.content:
                parts.append(TextPart(text=row.content))
            calls = [
                ToolCallPart(id=p["id"], name=p["name"], arguments=p["arguments"])
                for p in row.parts or ()
                if p.get("type") == "tool_call"
            ]
            unanswered.update((call.id, call.name) for call in calls)
            if row.content or calls:  # reasoning alone (a turn cancelled while thinking) is not a turn
                out.append(Message(role="assistant", parts=(*parts, *calls)))
        elif row.role == "tool":
            result = stored_tool_result(row, by_id)
            unanswered.pop(result.tool_call_id, None)
            out.append(Message(role="tool", parts=(result,)))
    return place_images(out, caps) if with_tools else _tools_as_text(out)


def _tools_as_text(messages: Sequence[Message]) -> list[Message]:
    """Tool calls and results as text in the assistant's turn; one assistant message per exchange."""
    out: list[Message] = []
    for message in messages:
        if message.role not in ("assistant", "tool"):
            out.append(message)
            continue
        text = [_as_text(part) for part in message.parts]
        if out and out[-1].role == "assistant":
            text = [out.pop().text, *text]
        out.append(Message(role="assistant", parts=(TextPart(text="\n".join(t for t in text if t)),)))
    return out


def _as_text(part: Part) -> str:
    if isinstance(part, ToolCallPart):
        return f"[called {part.name} with {part.arguments or '{}'}]"
    if isinstance(part, ToolResultPart):
        return f"[{part.name} {'failed' if part.is_error else 'returned'}: {part.content}]"
    return part.text if isinstance(part, TextPart) else ""


def stored_tool_result(row: MessageRow, delivered: Mapping[int, ImagePart] | None = None) -> ToolResultPart:
    """A stored tool message as a result: a server tool's output (with its delivered images, or a
    note for each older one the request has no room for), or a frontend tool's answer."""
    if "tool_agent_output" in row.meta:
        output = row.meta["tool_agent_output"]
        images = [
            (delivered or {}).get(id(part)) or f"[earlier image omitted: {part.get('name') or 'unnamed'}]"
            for part in image_parts_of(output)
        ]
        return result_part(output, images if delivered is not None else ())
    answer = row.meta.get("frontend_tool_result", {})
    return ToolResultPart(
        tool_call_id=str(answer.get("toolCallId", "")),
        name=str(answer.get("toolName", "")),
        content=str(answer["error"]) if answer.get("error") else row.content,
        is_error=bool(answer.get("error")),
    )


def pending_calls(history: Sequence[MessageRow]) -> dict[str, str]:
    """Tool calls of the thread that have no answer yet: ``{call id: tool name}``."""
    open_calls: dict[str, str] = {}
    for row in history:
        if row.role == "assistant":
            open_calls.update((p["id"], p["name"]) for p in row.parts or () if p.get("type") == "tool_call")
        elif row.role == "tool":
            open_calls.pop(stored_tool_result(row).tool_call_id, None)
    return open_calls


def _no_answers(unanswered: dict[str, str]) -> Message:
    parts = tuple(
        ToolResultPart(tool_call_id=call_id, name=name, content="no answer was given", is_error=True)
        for call_id, name in unanswered.items()
    )
    unanswered.clear()
    return Message(role="tool", parts=parts)


def _user_parts(
    row: MessageRow,
    delivered: Mapping[int, ImagePart],
    deleted: Set[str],
    attachments: Mapping[int, Sequence[Part]],
) -> list[Part]:
    if row.parts is None:  # a legacy row: text only
        return [TextPart(text=row.content)]
    parts: list[Part] = []
    for part in row.parts:
        if part.get("type") == "text":
            parts.append(TextPart(text=str(part.get("text", ""))))
        elif part.get("type") == "image" and part.get("uploadId") in deleted:
            parts.append(TextPart(text=deleted_note(part)))
        elif part.get("type") == "image":
            image = delivered.get(id(part))
            if image is not None:
                parts.append(image)
            else:
                parts.append(TextPart(text=f"[earlier image omitted: {part.get('name') or 'unnamed'}]"))
        elif id(part) in attachments:
            parts.extend(attachments[id(part)])
    return parts


def image_ref(part: Mapping[str, Any]) -> ImageRef:
    """A stored image part as the image pipeline takes it."""
    return ImageRef(
        path=str(part["path"]),
        mime_type=str(part["mimeType"]),
        sha256=str(part["sha256"]),
        name=str(part.get("name", "")),
        data=part.get("data"),  # an image sent inline (the OpenAI gateway's data: URL), never stored
    )
