"""Stored messages → history answers (AG-UI and chat surfaces), every image, document (and its
thumbnail) and audio clip re-signed on read (SPEC §7)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any, Literal, TypeVar

import msgspec

from iris.app.persistence.models import Message
from iris.app.runs.content.attachments import FALLBACK_KEY, deleted_note
from iris.app.runs.content.parts import UPLOADED_KINDS
from iris.app.runs.content.tool_results import image_parts_of
from iris.app.runs.conversations.branches import Tree
from iris.app.schemas.agents import AgentRef
from iris.app.schemas.chat import AudioPartOut as ChatAudioOut
from iris.app.schemas.chat import ChatMessageOut, ChatToolCallOut, ReasoningPartOut
from iris.app.schemas.chat import DocumentPartOut as ChatDocumentOut
from iris.app.schemas.chat import ImagePartOut as ChatImageOut
from iris.app.schemas.history import (
    AudioMetadataOut,
    AudioPartOut,
    BinaryPartOut,
    DocumentMetadataOut,
    DocumentPartOut,
    FunctionCallOut,
    HistoryMessage,
    ImageMetadataOut,
    ImagePartOut,
    PartOut,
    TextPartOut,
    ToolCallOut,
    UrlSourceOut,
)
from iris.app.storage.base import SignedUrl
from iris.app.storage.signing import with_urls

HistoryFormat = Literal["binary", "ag-ui"]
P = TypeVar("P")


def history_messages(
    row: Message,
    signed: Mapping[str, SignedUrl],
    *,
    image_format: HistoryFormat,
    deleted: Set[str],
    tree: Tree,
) -> list[HistoryMessage]:
    """One stored row as the history endpoint shows it; with ``?format=ag-ui`` an assistant row's
    reasoning comes first as AG-UI ``ReasoningMessage`` entries."""
    message = history_message(row, signed, image_format=image_format, deleted=deleted, tree=tree)
    if image_format != "ag-ui" or row.role != "assistant":
        return [message]
    reasoning = [
        HistoryMessage(
            id=f"{message.id}:reasoning:{index}",
            role="reasoning",
            content=str(part.get("text", "")) if part.get("redacted") is None else "",
            created_at=row.created_at,
            encrypted_value=part.get("redacted") or part.get("signature"),
            superseded_at=row.superseded_at,
        )
        for index, part in enumerate(_reasoning_parts(row))
        if part.get("toolCallId") is None
    ]
    return [*reasoning, message]


def _reasoning_parts(row: Message) -> list[dict[str, Any]]:
    return [p for p in row.parts or () if p.get("type") == "reasoning"]


def history_message(
    row: Message,
    signed: Mapping[str, SignedUrl],
    *,
    image_format: HistoryFormat,
    deleted: Set[str],
    tree: Tree,
) -> HistoryMessage:
    """One stored row as the history endpoint shows it. With ``?format=ag-ui`` the message is exactly an
    AG-UI 1.0 ``Message``: the timestamps and versions ride in its open ``metadata``
    (``iris/createdAt``, ``iris/supersededAt``, ``iris/siblings``, ``iris/siblingIndex``), where
    ``@ag-ui/client`` keeps them, instead of top-level fields it strips."""
    base: dict[str, Any] = {"id": row.external_id or str(row.id), "role": row.role}
    siblings, index = tree.versions(row.id)
    stamps: dict[str, Any] = {}
    if image_format == "ag-ui":
        stamps["iris/createdAt"] = row.created_at
        if row.superseded_at is not None:
            stamps["iris/supersededAt"] = row.superseded_at
        stamps |= {"iris/siblings": siblings, "iris/siblingIndex": index}
    else:
        base |= {
            "created_at": row.created_at,
            "superseded_at": row.superseded_at,
            "siblings": siblings,
            "sibling_index": index,
        }
    if row.role == "user":
        return HistoryMessage(
            **base,
            content=user_parts(row, signed, image_format=image_format, deleted=deleted),
            metadata=stamps or None,
        )
    if row.role == "assistant":
        worker = row.meta.get("worker_agent_output")
        signatures = {
            p["toolCallId"]: p.get("signature") for p in _reasoning_parts(row) if p.get("toolCallId")
        }
        calls = [
            ToolCallOut(
                id=p["id"],
                type="function",
                function=FunctionCallOut(name=p["name"], arguments=p["arguments"]),
                encrypted_value=signatures.get(p["id"]),
            )
            for p in row.parts or ()
            if p.get("type") == "tool_call"
        ]
        return HistoryMessage(
            **base,
            content=row.content,
            tool_calls=calls or None,
            metadata=({"workerAgentOutput": worker} if worker is not None else {}) | stamps or None,
        )
    tool = _tool_output(row, signed)
    answered = tool or row.meta.get("frontend_tool_result")  # a server tool's output, or the client's answer
    return HistoryMessage(
        **base,
        content=row.content,
        tool_call_id=str(answered["toolCallId"]) if answered else None,
        metadata=({"toolAgentOutput": tool} if tool is not None else {}) | stamps or None,
    )


def user_parts(
    row: Message, signed: Mapping[str, SignedUrl], *, image_format: HistoryFormat, deleted: Set[str]
) -> list[PartOut]:
    """Text, images, documents and audio of a user message; a legacy row with no parts is its text."""
    if row.parts is None:
        return [TextPartOut(text=row.content)]
    return _parts_out(row.parts, signed, deleted, lambda part, url: _media(part, url, signed, image_format))


def _parts_out(
    parts: Sequence[dict[str, Any]],
    signed: Mapping[str, SignedUrl],
    deleted: Set[str],
    media: Callable[[Mapping[str, Any], SignedUrl], P],
) -> list[TextPartOut | P]:
    """Stored parts for a reader: text as text, a deleted attachment as its note, other images,
    documents and audio through ``media`` with their fresh URL (both surfaces share this walk; only the
    shapes differ)."""
    out: list[TextPartOut | P] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            out.append(TextPartOut(text=str(part.get("text", ""))))
        elif kind in _MEDIA and part.get("uploadId") in deleted:
            out.append(TextPartOut(text=deleted_note(part)))
        elif kind in _MEDIA and part.get("path") in signed:
            out.append(media(part, signed[part["path"]]))
    return out


_MEDIA = UPLOADED_KINDS


def stored_parts(rows: Sequence[Message]) -> list[dict[str, Any]]:
    """Every stored part of these rows, tools' media and documents' thumbnails too (for signing them
    in one batch)."""
    parts = [
        part
        for row in rows
        for part in [*(row.parts or ()), *((row.meta.get("tool_agent_output") or {}).get("content") or ())]
    ]
    thumbnails = [
        {"type": "document", "bucket": part.get("bucket"), "path": part["thumbnailPath"]}
        for part in parts
        if part.get("type") == "document" and part.get("thumbnailPath")
    ]
    return parts + thumbnails


def _thumbnail(part: Mapping[str, Any], signed: Mapping[str, SignedUrl]) -> str | None:
    url = signed.get(str(part.get("thumbnailPath") or ""))
    return url.url if url is not None else None


def _tool_output(row: Message, signed: Mapping[str, SignedUrl]) -> dict[str, Any] | None:
    """A tool row's ``ToolAgentOutput``, its stored media with fresh URLs."""
    tool = row.meta.get("tool_agent_output")
    if tool is None or not tool.get("content"):
        return tool
    return {**tool, "content": with_urls(tool["content"], signed)}


def _chat_image(part: Mapping[str, Any], url: SignedUrl) -> ChatImageOut:
    return ChatImageOut(
        image=url.url,
        mime_type=str(part["mimeType"]),
        name=str(part.get("name", "")),
        expires_at=url.expires_at,
    )


def _estimate(part: Mapping[str, Any]) -> int | None:
    estimate = part.get("tokenEstimate")
    tokens = estimate.get("tokens") if isinstance(estimate, Mapping) else None
    return tokens if isinstance(tokens, int) else None


def _chat_media(
    part: Mapping[str, Any], url: SignedUrl, signed: Mapping[str, SignedUrl]
) -> ChatImageOut | ChatDocumentOut | ChatAudioOut:
    mime, name = str(part["mimeType"]), str(part.get("name", ""))
    if part.get("type") == "document":
        return ChatDocumentOut(
            document=url.url,
            mime_type=mime,
            name=name,
            expires_at=url.expires_at,
            pages=part.get("pages"),
            thumbnail_url=_thumbnail(part, signed),
            document_fallback=part.get(FALLBACK_KEY),
        )
    if part.get("type") == "audio":
        return ChatAudioOut(
            audio=url.url,
            mime_type=mime,
            name=name,
            expires_at=url.expires_at,
            duration_seconds=part.get("durationSeconds"),
        )
    return _chat_image(part, url)


def _media(
    part: Mapping[str, Any], url: SignedUrl, signed: Mapping[str, SignedUrl], image_format: HistoryFormat
) -> PartOut:
    name = str(part.get("name", ""))
    mime = str(part["mimeType"])
    source = UrlSourceOut(type="url", value=url.url, mime_type=mime)
    if image_format == "ag-ui" and part.get("type") == "document":
        return DocumentPartOut(
            source=source,
            metadata=DocumentMetadataOut(
                filename=name,
                expires_at=url.expires_at,
                pages=part.get("pages"),
                thumbnail_url=_thumbnail(part, signed),
                estimated_tokens=_estimate(part),
                document_fallback=part.get(FALLBACK_KEY),
            ),
        )
    if image_format == "ag-ui" and part.get("type") == "audio":
        return AudioPartOut(
            source=source,
            metadata=AudioMetadataOut(
                filename=name,
                expires_at=url.expires_at,
                duration_seconds=part.get("durationSeconds"),
                estimated_tokens=_estimate(part),
            ),
        )
    if image_format == "ag-ui":
        return ImagePartOut(
            source=UrlSourceOut(type="url", value=url.url, mime_type=mime),
            metadata=ImageMetadataOut(
                filename=name, expires_at=url.expires_at, estimated_tokens=_estimate(part)
            ),
        )
    return BinaryPartOut(mime_type=mime, url=url.url, filename=name, expires_at=url.expires_at)


def chat_message(
    row: Message, signed: Mapping[str, SignedUrl], *, deleted: Set[str], tree: Tree
) -> ChatMessageOut:
    """One stored row as seed 002's chat history shows it: ``{id, role, content, parts, createdAt}``."""
    parts: list[TextPartOut | ChatImageOut | ChatDocumentOut | ChatAudioOut | ReasoningPartOut] = (
        _parts_out(  # type: ignore[assignment]
            row.parts, signed, deleted, lambda part, url: _chat_media(part, url, signed)
        )
        if row.role == "user" and row.parts is not None
        else []
    )
    if row.role == "assistant":  # what the model thought comes before its answer
        parts.extend(
            ReasoningPartOut(text="", redacted=True)
            if p.get("redacted") is not None
            else ReasoningPartOut(text=str(p.get("text", "")))
            for p in _reasoning_parts(row)
            if p.get("redacted") is not None or p.get("text")
        )
    if row.content and not any(
        isinstance(p, TextPartOut | ChatImageOut | ChatDocumentOut | ChatAudioOut) for p in parts
    ):
        parts.append(TextPartOut(text=row.content))  # answers, and legacy rows stored without parts
    siblings, index = tree.versions(row.id)
    tool = _tool_output(row, signed) if row.role == "tool" else None
    if tool is not None:  # what the tool returned to look at, after its summary
        parts += [_chat_image(p, signed[p["path"]]) for p in image_parts_of(tool) if p["path"] in signed]
    worker = row.meta.get("worker_agent_output") or {} if row.role == "assistant" else {}
    calls = [
        ChatToolCallOut(id=p["id"], name=p["name"], arguments=p["arguments"])
        for p in row.parts or ()
        if row.role == "assistant" and p.get("type") == "tool_call"
    ]
    answered = tool or row.meta.get("frontend_tool_result")
    return ChatMessageOut(
        id=row.external_id or str(row.id),
        role=row.role,  # type: ignore[arg-type]  # the column only holds these roles
        content=row.content,
        parts=parts,
        created_at=row.created_at,
        siblings=siblings,
        sibling_index=index,
        superseded_at=row.superseded_at,
        agent=_answered_by(row),
        tool_calls=calls or None,
        usage=worker.get("usage"),
        tool_call_id=str(answered["toolCallId"]) if answered else None,
        tool_output=tool,
    )


def _answered_by(row: Message) -> AgentRef | None:
    """The agent version an assistant row's worker output names (rows from before versions: none)."""
    agent = (row.meta.get("worker_agent_output") or {}).get("agent") if row.role == "assistant" else None
    return msgspec.convert(agent, AgentRef) if agent is not None else None
