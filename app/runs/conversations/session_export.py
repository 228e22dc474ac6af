"""A session taken out: its whole tree as JSON (:class:`~iris.app.schemas.session_export.SessionExport`),
or its active line as Markdown for reading, images as links. Image URLs are signed for this export.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence, Set
from typing import Any

from iris.app.persistence.models import ChatSession, Message
from iris.app.persistence.repositories import utcnow
from iris.app.runs.content.attachments import deleted_note
from iris.app.schemas.session_export import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    ExportImagePart,
    ExportMessage,
    ExportPart,
    ExportReasoningPart,
    ExportSession,
    ExportTextPart,
    ExportToolAnswer,
    ExportToolCall,
    SessionExport,
)
from iris.app.storage.base import SignedUrl

ROLE_HEADINGS = {"user": "You", "assistant": "Assistant", "tool": "Tool"}


def session_export(
    session: ChatSession,
    agent_slug: str,
    rows: Sequence[Message],
    signed: Mapping[str, SignedUrl],
    *,
    deleted: Set[str],
) -> SessionExport:
    """Every message of the session (``rows``, in the order written) with its parent, and the line."""
    shown = {row.id: row.external_id or str(row.id) for row in rows}
    leaf = session.active_leaf_id
    return SessionExport(
        format=EXPORT_FORMAT,
        version=EXPORT_VERSION,
        exported_at=utcnow(),
        session=ExportSession(
            id=session.thread_id,
            agent_slug=agent_slug,
            title=session.title,
            created_at=session.created_at,
            last_activity_at=session.last_activity_at,
            pinned=session.pinned,
            archived=session.archived_at is not None,
        ),
        messages=[_message(row, shown, signed, deleted) for row in rows],
        active_message_id=shown.get(leaf) if leaf is not None else None,
    )


def _message(
    row: Message, shown: Mapping[Any, str], signed: Mapping[str, SignedUrl], deleted: Set[str]
) -> ExportMessage:
    parts: list[ExportPart] = []
    calls: list[ExportToolCall] = []
    for part in row.parts or ():
        kind = part.get("type")
        if kind == "text":
            parts.append(ExportTextPart(text=str(part.get("text", ""))))
        elif kind == "image" and part.get("uploadId") in deleted:
            parts.append(ExportTextPart(text=deleted_note(part)))
        elif kind == "image" and part.get("path") in signed:
            parts.append(_image(part, signed[part["path"]]))
        elif kind == "reasoning" and part.get("text"):
            parts.append(ExportReasoningPart(text=str(part["text"])))
        elif kind == "tool_call":
            calls.append(ExportToolCall(id=part["id"], name=part["name"], arguments=part["arguments"]))
    if row.role == "user" and row.parts is None:
        parts.append(ExportTextPart(text=row.content))  # a legacy row: text only
    answer = row.meta.get("frontend_tool_result")
    return ExportMessage(
        id=shown[row.id],
        role=row.role,  # type: ignore[arg-type]  # the column only holds these roles
        content=row.content,
        created_at=row.created_at,
        parts=parts,
        parent_id=shown.get(row.parent_id) if row.parent_id is not None else None,
        superseded_at=row.superseded_at,
        tool_calls=calls or None,
        worker_agent_output=row.meta.get("worker_agent_output"),
        tool_agent_output=row.meta.get("tool_agent_output"),
        tool_answer=ExportToolAnswer(
            tool_call_id=str(answer["toolCallId"]),
            tool_name=str(answer["toolName"]),
            error=answer.get("error"),
        )
        if answer
        else None,
    )


def _image(part: Mapping[str, Any], url: SignedUrl) -> ExportImagePart:
    return ExportImagePart(
        image=url.url,
        mime_type=part["mimeType"],
        name=str(part.get("name", "")),
        expires_at=url.expires_at,
        upload_id=str(part["uploadId"]),
        sha256=str(part["sha256"]),
        size=int(part["size"]),
        width=int(part["width"]),
        height=int(part["height"]),
    )


def active_line(export: SessionExport) -> list[ExportMessage]:
    """The export's active line, first message first."""
    by_id = {message.id: message for message in export.messages}
    line: list[ExportMessage] = []
    current = by_id.get(export.active_message_id or "")
    while current is not None:
        line.append(current)
        current = by_id.get(current.parent_id or "")
    return line[::-1]


def markdown(export: SessionExport) -> str:
    """The active line for reading: a heading per message, its text, images as links (valid until
    they expire), the model's thinking quoted, tool calls and results as one line each."""
    session = export.session
    line = active_line(export)
    expiries = [p.expires_at for m in line for p in m.parts if isinstance(p, ExportImagePart)]
    lines = [
        f"# {session.title or 'Untitled chat'}",
        "",
        f"Exported from Iris on {_when(export.exported_at)} · agent `{session.agent_slug}`"
        + (f" · image links work until {_when(min(expiries))}" if expiries else ""),
    ]
    for message in line:
        heading = ROLE_HEADINGS[message.role]
        if message.role == "tool":
            name = (message.tool_agent_output or {}).get("toolName") or (
                message.tool_answer.tool_name if message.tool_answer else "tool"
            )
            heading = f"Tool `{name}`"
        lines += ["", f"## {heading} · {_when(message.created_at)}", ""]
        lines += _body(message)
    return "\n".join(lines).rstrip() + "\n"


def _body(message: ExportMessage) -> list[str]:
    out: list[str] = []
    for part in message.parts:
        if isinstance(part, ExportReasoningPart):
            out += [*(f"> {line}" if line else ">" for line in ["*Thinking:*", *part.text.splitlines()]), ""]
        elif isinstance(part, ExportImagePart):
            out += [f"![{_alt(part.name)}]({part.image})", ""]
        elif message.role == "user":
            out += [part.text, ""]
    if message.role != "user" and message.content:
        out += [message.content, ""]
    out += [f"- called `{call.name}` with `{call.arguments or '{}'}`" for call in message.tool_calls or ()]
    return out


def _alt(name: str) -> str:
    return re.sub(r"[\[\]\\]", "", name) or "image"


def _when(stamp: dt.datetime) -> str:
    return stamp.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def filename(session: ChatSession, extension: str) -> str:
    """A safe download name from the title (``iris-<words>.<extension>``)."""
    words = re.findall(r"[A-Za-z0-9]+", session.title or "")[:8]
    return f"iris-{'-'.join(words).lower() or 'chat'}.{extension}"
