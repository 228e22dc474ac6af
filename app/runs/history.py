"""Stored messages → history answers (AG-UI and chat surfaces), every image re-signed on read (SPEC §7)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any, Literal

from app.persistence.models import Message
from app.schemas.chat import ChatMessageOut
from app.schemas.chat import ImagePartOut as ChatImageOut
from app.schemas.chat import TextPartOut as ChatTextOut
from app.schemas.history import (
    BinaryPartOut,
    FunctionCallOut,
    HistoryMessage,
    ImageMetadataOut,
    ImagePartOut,
    PartOut,
    TextPartOut,
    ToolCallOut,
    UrlSourceOut,
)
from app.storage.base import SignedUrl

HistoryFormat = Literal["binary", "ag-ui"]


def history_message(
    row: Message, signed: Mapping[str, SignedUrl], *, image_format: HistoryFormat, deleted: Set[str]
) -> HistoryMessage:
    """One stored row as the history endpoint shows it."""
    base: dict[str, Any] = {
        "id": row.external_id or str(row.id),
        "role": row.role,
        "created_at": row.created_at,
        "superseded_at": row.superseded_at,
    }
    if row.role == "user":
        return HistoryMessage(
            **base, content=user_parts(row, signed, image_format=image_format, deleted=deleted)
        )
    if row.role == "assistant":
        worker = row.meta.get("worker_agent_output")
        calls = [
            ToolCallOut(
                id=p["id"],
                type="function",
                function=FunctionCallOut(name=p["name"], arguments=p["arguments"]),
            )
            for p in row.parts or ()
            if p.get("type") == "tool_call"
        ]
        return HistoryMessage(
            **base,
            content=row.content,
            tool_calls=calls or None,
            metadata={"workerAgentOutput": worker} if worker is not None else None,
        )
    tool = row.meta.get("tool_agent_output")
    answered = tool or row.meta.get("frontend_tool_result")  # a server tool's output, or the client's answer
    return HistoryMessage(
        **base,
        content=row.content,
        tool_call_id=str(answered["toolCallId"]) if answered else None,
        metadata={"toolAgentOutput": tool} if tool is not None else None,
    )


def user_parts(
    row: Message, signed: Mapping[str, SignedUrl], *, image_format: HistoryFormat, deleted: Set[str]
) -> list[PartOut]:
    """Text and images of a user message; a deleted image (``delete_attachment``) becomes a note."""
    if row.parts is None:
        return [TextPartOut(text=row.content)]
    out: list[PartOut] = []
    for part in row.parts:
        if part.get("type") == "text":
            out.append(TextPartOut(text=str(part.get("text", ""))))
        elif part.get("type") == "image" and part.get("uploadId") in deleted:
            out.append(TextPartOut(text=f"[image deleted: {part.get('name') or 'unnamed'}]"))
        elif part.get("type") == "image" and part.get("path") in signed:
            out.append(_image(part, signed[part["path"]], image_format))
    return out


def stored_parts(rows: Sequence[Message]) -> list[dict[str, Any]]:
    """Every stored part of these rows (for signing them in one batch)."""
    return [part for row in rows for part in row.parts or ()]


def _image(part: Mapping[str, Any], url: SignedUrl, image_format: HistoryFormat) -> PartOut:
    name = str(part.get("name", ""))
    mime = str(part["mimeType"])
    if image_format == "ag-ui":
        return ImagePartOut(
            source=UrlSourceOut(type="url", value=url.url, mime_type=mime),
            metadata=ImageMetadataOut(filename=name, expires_at=url.expires_at),
        )
    return BinaryPartOut(mime_type=mime, url=url.url, filename=name, expires_at=url.expires_at)


def chat_message(row: Message, signed: Mapping[str, SignedUrl], *, deleted: Set[str]) -> ChatMessageOut:
    """One stored row as seed 002's chat history shows it: ``{id, role, content, parts, createdAt}``."""
    parts: list[ChatTextOut | ChatImageOut] = []
    for part in row.parts if row.role == "user" and row.parts is not None else ():
        if part.get("type") == "text":
            parts.append(ChatTextOut(text=str(part.get("text", ""))))
        elif part.get("type") == "image" and part.get("uploadId") in deleted:
            parts.append(ChatTextOut(text=f"[image deleted: {part.get('name') or 'unnamed'}]"))
        elif part.get("type") == "image" and part.get("path") in signed:
            url = signed[part["path"]]
            parts.append(
                ChatImageOut(
                    image=url.url,
                    mime_type=str(part["mimeType"]),
                    name=str(part.get("name", "")),
                    expires_at=url.expires_at,
                )
            )
    if not parts and row.content:  # assistant and tool answers, and legacy rows stored without parts
        parts.append(ChatTextOut(text=row.content))
    return ChatMessageOut(
        id=row.external_id or str(row.id),
        role=row.role,  # type: ignore[arg-type]  # the column only holds these roles
        content=row.content,
        parts=parts,
        created_at=row.created_at,
        superseded_at=row.superseded_at,
    )
