"""What a run takes from its request: rows for the messages its thread does not hold yet, and the
answers to the thread's open interrupts.

A user message becomes canonical parts (every attachment through the URL policy:
:mod:`iris.app.runs.content.parts`);
a tool message must answer one of the thread's frontend tool calls that is still waiting; assistant and
system messages are never taken. An open interrupt must be answered (``resume``) before the thread
goes on (:mod:`iris.app.runs.intake.interrupts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from iris.app.agui.input import InboundMessage, InboundTool, InboundUser, RunAgentInput
from iris.app.errors import Unprocessable
from iris.app.media.inline_uploads import InlineUploads
from iris.app.persistence.models import Message, Run
from iris.app.persistence.repositories import UploadRepository, utcnow
from iris.app.runs.content.context import pending_calls
from iris.app.runs.content.parts import PartLimits, canonical_user_parts, image_parts
from iris.app.runs.content.usage import image_part_estimate
from iris.app.runs.intake.interrupts import ResumeDecision, all_expired, match_resume
from iris.app.security.auth import Principal
from iris.app.security.url_policy import UrlPolicy
from iris.app.settings import Settings
from iris.providers import Capabilities, ModelSpec, Provider


async def new_messages(
    inbound: Sequence[InboundMessage],
    history: Sequence[Message],
    *,
    principal: Principal,
    thread_id: str,
    uploads: UploadRepository,
    settings: Settings,
    policy: UrlPolicy,
    inline: InlineUploads | None = None,
) -> list[Message]:
    """Rows for the messages the thread does not hold yet: user messages (canonical parts) and the
    client's answers to its frontend tool calls. Assistant and system messages are never taken."""
    open_calls = pending_calls(history)
    rows: list[Message] = []
    for message in inbound:
        if isinstance(message, InboundUser):
            parts = await canonical_user_parts(
                message.parts,
                user_id=principal.user_id,
                thread_id=thread_id,
                policy=policy,
                uploads=uploads,
                limits=PartLimits.of(settings),
                field=message.field,
                inline=inline,
            )
            rows.append(
                Message(role="user", content=_text_of(parts), parts=parts, meta={}, external_id=message.id)
            )
        elif isinstance(message, InboundTool):
            name = open_calls.pop(message.tool_call_id, None)
            if name is None:
                raise Unprocessable(
                    f"No tool call {message.tool_call_id!r} of this thread is waiting for an answer.",
                    code="tool_call_unknown",
                    field=f"{message.field}.toolCallId",
                )
            answer: dict[str, Any] = {"toolCallId": message.tool_call_id, "toolName": name}
            if message.error:
                answer["error"] = message.error
            rows.append(
                Message(
                    role="tool",
                    content=message.content,
                    meta={"frontend_tool_result": answer},
                    external_id=message.id,
                )
            )
    return rows


def resume_decisions(awaiting: Run | None, body: RunAgentInput) -> tuple[list[ResumeDecision], list[str]]:
    """Match ``resume`` to the thread's open interrupts; an open interrupt needs an answer to go on,
    unless every one has expired (nothing can answer them: the thread takes a new message, and its
    unanswered calls are told to the model as such)."""
    entries = body.resume or []
    if awaiting is None or not awaiting.pending_interrupts:
        return [], [entry.interrupt_id for entry in entries]  # nothing to resume: unrecognised entries
    if not entries and all_expired(awaiting.pending_interrupts, utcnow()):
        return [], []
    if not entries:
        raise Unprocessable(
            "This thread is waiting for an answer to its interrupt: send 'resume' (POST /agent/runs/resume).",
            code="interrupt_pending",
            field="resume",
            extra={"interruptIds": [i.get("id") for i in awaiting.pending_interrupts]},
        )
    return match_resume(awaiting.pending_interrupts, entries, utcnow())


def estimate_images(row: Message, provider: Provider, model: ModelSpec, caps: Capabilities) -> None:
    """Each new image part records what it will cost this model (the vendor's published formula)."""
    for part in image_parts(row.parts):
        estimate = image_part_estimate(part, provider, model, caps)
        if estimate is not None:
            part["tokenEstimate"] = estimate


def _text_of(parts: Sequence[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if p.get("type") == "text")
