"""The AI SDK's ``useChat`` request → the run engine's input: the chat surface's checks and storage.

Only the last ``UIMessage`` is read; Iris keeps the history. A user message's ``text`` parts stay text
and each ``file`` part becomes the AG-UI part of its kind (``image/*`` an image, ``application/pdf`` a
document, ``audio/*`` audio): an Iris-signed upload URL as a ``url`` source (the attachment policy
checks it), a ``data:`` URL as inline bytes (checked as an upload is, stored as an upload of the
thread once the run is accepted). An assistant message answers approvals: each tool part in the
``approval-responded`` state is a ``resume`` entry (approved: ``resolved``; denied: ``cancelled``, its
reason kept in the payload), as is each ``data-interrupt`` part given a ``response`` (a tool's
question), and the resumed run's chunks go on in that message.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from iris.app.agui.input import ResumeEntryIn, RunAgentInput
from iris.app.errors import Unprocessable
from iris.app.runs.intake.plan import Rewind
from iris.app.schemas.ui_chat import UiChatRequest

_KINDS = (("image/", "image"), ("application/pdf", "document"), ("audio/", "audio"))


@dataclass(frozen=True, slots=True)
class UiChatInput:
    """The run the request asks for, the rewind (a regeneration) and the answer it continues."""

    run: RunAgentInput
    rewind: Rewind | None
    continues: str | None


def ui_chat_run_input(slug: str, body: UiChatRequest) -> UiChatInput:
    """The run input for a ``useChat`` request (422 for one with nothing to answer)."""
    forwarded: dict[str, Any] = {"agent": slug}
    for name, value in (
        ("modelId", body.model_id),
        ("enableThinking", body.enable_thinking),
        ("enableTools", body.enable_tools),
    ):
        if value is not None:
            forwarded[name] = value
    run_id = str(uuid.uuid4())
    messages: list[dict[str, Any]] = []
    resume: list[ResumeEntryIn] | None = None
    continues, rewind = None, None
    last = body.messages[-1] if body.messages else None
    if body.trigger == "regenerate-message":
        rewind = Rewind(kind="regenerate")
    elif isinstance(last, dict) and last.get("role") == "assistant":
        resume = approval_answers(last, len(body.messages) - 1)
        continues = str(last.get("id") or "") or None
    elif isinstance(last, dict) and last.get("role") == "user":
        content = user_content(last.get("parts"), f"messages[{len(body.messages) - 1}].parts")
        messages = [{"id": str(uuid.uuid4()), "role": "user", "content": content}]
    else:
        raise Unprocessable(
            "Send the new user message (or the answered approvals) last in 'messages'.",
            code="empty_message",
            field="messages",
        )
    run = RunAgentInput(
        thread_id=body.id,
        run_id=run_id,
        messages=messages,
        protocol_version="1.0",
        forwarded_props=forwarded,
        resume=resume,
    )
    return UiChatInput(run=run, rewind=rewind, continues=continues)


def user_content(parts: object, field: str) -> list[dict[str, Any]]:
    """A user ``UIMessage``'s parts as AG-UI 1.0 content parts: text and files."""
    if not isinstance(parts, list):
        raise Unprocessable("A message needs 'parts'.", code="validation_failed", field=field)
    out: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
        elif kind == "file":
            out.append(file_part(part, f"{field}[{index}]"))
        else:
            raise Unprocessable(
                f"Part type {kind!r} is not accepted in a user message: send text and file parts.",
                code="part_type_unsupported",
                field=f"{field}[{index}].type",
            )
    return out


def file_part(part: dict[str, Any], field: str) -> dict[str, Any]:
    """A ``file`` part as the AG-UI part of its kind, from a signed upload URL or a ``data:`` URL."""
    url, media_type = part.get("url"), part.get("mediaType")
    if not isinstance(url, str) or not isinstance(media_type, str):
        raise Unprocessable("A file part needs 'url' and 'mediaType'.", code="validation_failed", field=field)
    kind = next((k for prefix, k in _KINDS if media_type.lower().startswith(prefix)), None)
    if kind is None:
        raise Unprocessable(
            f"{media_type!r} is not an accepted type (PNG, JPEG, WebP, PDF, WAV or MP3).",
            code="unsupported_media_type",
            field=f"{field}.mediaType",
        )
    if url.startswith("data:"):
        header, _, data = url[5:].partition(",")
        if not header.endswith(";base64"):
            raise Unprocessable(
                "A data: URL must be base64 (data:<type>;base64,…).",
                code="invalid_base64",
                field=f"{field}.url",
            )
        source = {"type": "data", "value": data, "mimeType": media_type}
    else:
        source = {"type": "url", "value": url, "mimeType": media_type}
    name = part.get("filename")
    return {
        "type": kind,
        "source": source,
        **({"metadata": {"filename": name}} if isinstance(name, str) else {}),
    }


def approval_answers(message: dict[str, Any], index: int) -> list[ResumeEntryIn]:
    """The ``approval-responded`` tool parts of the last assistant message, and its answered
    questions (:func:`question_answer`), as ``resume`` entries."""
    entries: list[ResumeEntryIn] = []
    for part in message.get("parts") or ():
        answered = question_answer(part, index)
        if answered is not None:
            entries.append(answered)
        if not isinstance(part, dict) or part.get("state") != "approval-responded":
            continue
        approval = part.get("approval")
        if not isinstance(approval, dict) or not isinstance(approval.get("id"), str):
            raise Unprocessable(
                "An answered approval needs its 'approval.id'.",
                code="validation_failed",
                field=f"messages[{index}].parts",
            )
        approved = approval.get("approved") is True
        reason = approval.get("reason")
        entries.append(
            ResumeEntryIn(
                interrupt_id=approval["id"],
                status="resolved" if approved else "cancelled",
                payload={"reason": reason} if isinstance(reason, str) else None,
            )
        )
    if not entries:
        raise Unprocessable(
            "The last message is an answer with no approval answered: send a user message.",
            code="empty_message",
            field=f"messages[{index}]",
        )
    return entries


def question_answer(part: object, index: int) -> ResumeEntryIn | None:
    """A ``data-interrupt`` part (any interrupt but an approval: an MCP tool's question) whose ``data``
    the client gave a ``response``: ``{status, payload}``, as a ``resume`` entry has them."""
    if not isinstance(part, dict) or part.get("type") != "data-interrupt":
        return None
    data = part.get("data")
    response = data.get("response") if isinstance(data, dict) else None
    if response is None:
        return None
    status = response.get("status") if isinstance(response, dict) else None
    if status not in ("resolved", "cancelled") or not isinstance(part.get("id"), str):
        raise Unprocessable(
            "An answered question needs its 'id' and 'data.response.status' (resolved or cancelled).",
            code="validation_failed",
            field=f"messages[{index}].parts",
        )
    return ResumeEntryIn(interrupt_id=part["id"], status=status, payload=response.get("payload"))
