"""Seed 002's chat request → the run engine's input: same checks, same stream, same storage.

Text parts stay text; ``{type:"image", image:<signed url>, mimeType, name}`` becomes the AG-UI 1.0
image part (its URL still goes through the attachment policy), and ``{type:"document", document:…}``
and ``{type:"audio", audio:…}`` (same fields) the AG-UI ``document`` and ``audio`` parts;
``content: "…"`` from old clients is one text part. Field names in errors are the chat body's
(``parts[1]``), not the engine's.
"""

from __future__ import annotations

import uuid
from typing import Any

from iris.app.agui.input import RunAgentInput
from iris.app.errors import IrisError, NotFound, Unprocessable
from iris.app.runs.intake.plan import Rewind
from iris.app.schemas.chat import ChatRequest

_ENGINE_FIELD = "messages[0].content"


def chat_run_input(slug: str, body: ChatRequest) -> tuple[RunAgentInput, Rewind | None]:
    """The run input for a chat request, and the edit it asks for, if any."""
    if body.edit_message_id is not None and body.regenerate:
        raise Unprocessable(
            "Ask for an edit or a regeneration, not both.", code="validation_failed", field="regenerate"
        )
    if body.resume and (body.edit_message_id is not None or body.regenerate):
        raise Unprocessable(
            "Answer the open interrupt first ('resume'), then edit or regenerate.",
            code="validation_failed",
            field="resume",
        )
    resuming_only = bool(body.resume) and not body.parts and not body.content
    rewind = (
        Rewind(kind="edit", message_id=body.edit_message_id)
        if body.edit_message_id is not None
        else Rewind(kind="regenerate")
        if body.regenerate
        else None
    )
    prompt_only = body.prompt is not None and not body.parts and not body.content
    messages = (
        []
        if body.regenerate or resuming_only or prompt_only
        else [{"id": str(uuid.uuid4()), "role": "user", "content": message_content(body.parts, body.content)}]
    )
    forwarded: dict[str, Any] = {"agent": slug}
    if body.model_id is not None:
        forwarded["modelId"] = body.model_id
    if body.enable_tools is not None:
        forwarded["enableTools"] = body.enable_tools
    if body.enable_thinking is not None:
        forwarded["enableThinking"] = body.enable_thinking
    if body.prompt is not None:
        forwarded["prompt"] = {"name": body.prompt.name, "arguments": body.prompt.arguments}
    run_input = RunAgentInput(
        thread_id=body.session_id or str(uuid.uuid4()),
        run_id=str(uuid.uuid4()),
        messages=messages,
        protocol_version="1.0",
        forwarded_props=forwarded,
        resume=body.resume,
    )
    return run_input, rewind


def chat_field(exc: IrisError, parts_field: str = "parts") -> IrisError:
    """Rename an engine field (``messages[0].content[1]``) to the chat body's (``parts[1]``). A session
    of another agent is not under this agent's path: 404, as the chat surface's other endpoints say."""
    if exc.code == "thread_agent_mismatch":
        return NotFound("No such session with this agent.", code="thread_not_found", field="sessionId")
    if exc.field is not None and exc.field.startswith(_ENGINE_FIELD):
        exc.field = parts_field + exc.field[len(_ENGINE_FIELD) :]
    elif exc.field == "messages[0]":
        exc.field = parts_field
    elif exc.field == "threadId":
        exc.field = "sessionId"
    elif exc.field == "forwardedProps.modelId":
        exc.field = "modelId"
    elif exc.field == "forwardedProps.enableThinking":
        exc.field = "enableThinking"
    return exc


def message_content(parts: list[dict[str, Any]] | None, content: str | None) -> list[dict[str, Any]]:
    """Seed 002's ``parts`` (or an old client's ``content`` string) as AG-UI 1.0 content parts."""
    if parts:
        return [_part(part, index) for index, part in enumerate(parts)]
    if content:
        return [{"type": "text", "text": content}]
    raise Unprocessable(
        "Send 'parts' (or 'content') with text or images.", code="empty_message", field="parts"
    )


def _part(part: dict[str, Any], index: int) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return part
    if kind in ("image", "document", "audio"):
        url, mime = part.get(kind), part.get("mimeType")
        if not isinstance(url, str) or not isinstance(mime, str):
            raise Unprocessable(
                f"A {kind} part needs '{kind}' (its signed URL) and 'mimeType'.",
                code="validation_failed",
                field=f"parts[{index}]",
            )
        name = part.get("name")
        source = {"type": "url", "value": url, "mimeType": mime}
        return {
            "type": kind,
            "source": source,
            **({"metadata": {"filename": name}} if isinstance(name, str) else {}),
        }
    raise Unprocessable(
        f"Part type {kind!r} is not accepted here: send text, image, document and audio parts.",
        code="part_type_unsupported",
        field=f"parts[{index}].type",
    )
