"""Interrupts: a run stops to ask before a tool with side effects (``tool_approval``), because an MCP
tool asked the user a question mid-call (``input_required``), or because an MCP server needs the user's
own sign-in (``authorization_required``), and a later run resumes.

The interrupted run ends with ``RUN_FINISHED`` outcome ``interrupt``; the event store keeps its
interrupts on the run row. A resuming run (``/agent/runs/resume``, or ``/agent/runs`` with ``resume``)
must answer every one of them: ``resolved`` runs the tool (with edited arguments if the payload gives
``arguments``), ``cancelled`` skips it and the model is told. An interrupt without an answer is never
acted on: the request is refused before the stream, as is one that has expired. An ``input_required``
answer is checked against the server's form before the stream (:func:`question_answer`).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import uuid_utils

from iris.app.agui.events import Interrupt
from iris.app.agui.input import ResumeEntryIn
from iris.app.errors import Unprocessable
from iris.app.mcp.elicitation import ELICITATION_KEY, Answer, Question, answer_from, form_problem

TOOL_CALL_KEY = "iris/toolCall"
AUTHORIZATION_KEY = "iris/authorization"
QUESTION_REASONS = ("input_required", "authorization_required")
"""Interrupts of a call still waiting at an MCP server: the resume gives it the answer."""
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Resolve to run the tool, cancel to skip it; a resolved payload may edit the arguments, "
    "a cancelled one say why.",
    "properties": {
        "arguments": {"type": "object", "description": "arguments to run the tool with instead"},
        "reason": {"type": "string", "description": "why the user declined (told to the model)"},
    },
    "additionalProperties": False,
}


def approval_interrupt(call_id: str, tool_name: str, arguments: str, *, expires_at: dt.datetime) -> Interrupt:
    """The interrupt that asks the user to approve one tool call."""
    return Interrupt(
        id=f"int_{uuid_utils.uuid7()}",
        reason="tool_approval",
        message=f"Allow {tool_name} with {arguments or '{}'}?",
        tool_call_id=call_id,
        response_schema=APPROVAL_SCHEMA,
        expires_at=expires_at.isoformat(timespec="seconds"),
        metadata={TOOL_CALL_KEY: {"name": tool_name, "arguments": arguments}},
    )


def question_interrupt(call_id: str, tool_name: str, arguments: str, question: Question) -> Interrupt:
    """The interrupt that puts an MCP server's question to the user: its form's schema as the
    ``responseSchema`` (form mode), or the page to visit in ``metadata["iris/elicitation"].url``; a
    server that needs the user's sign-in is an ``authorization_required`` interrupt, the authorization
    URL in ``metadata["iris/authorization"].url`` (resolved once signed in, cancelled to give up)."""
    details: dict[str, Any] = {"server": question.server, "mode": question.mode}
    if question.url is not None:
        details["url"] = question.url
    signing_in = question.mode == "authorize"
    return Interrupt(
        id=question.id,
        reason="authorization_required" if signing_in else "input_required",
        message=question.message,
        tool_call_id=call_id,
        response_schema=question.schema,
        expires_at=question.expires_at.isoformat(timespec="seconds"),
        metadata={
            TOOL_CALL_KEY: {"name": tool_name, "arguments": arguments},
            AUTHORIZATION_KEY if signing_in else ELICITATION_KEY: details,
        },
    )


@dataclass(frozen=True, slots=True)
class ResumeDecision:
    """What the user said about one interrupted tool call: ``answer`` is set for an ``input_required``
    interrupt (the answer to the server's question)."""

    interrupt_id: str
    tool_call_id: str
    tool_name: str
    arguments: str
    status: Literal["resolved", "cancelled"]
    reason: str | None = None
    """Why the user declined, when a cancelled entry's payload says (``{"reason": "…"}``)."""
    answer: Answer | None = None


def all_expired(pending: Sequence[Mapping[str, Any]], now: dt.datetime) -> bool:
    """Whether every one of these open interrupts is past its expiry (none can be answered any more)."""
    expiries = [msgspec.convert(stored, Interrupt).expires_at for stored in pending]
    return all(at is not None and dt.datetime.fromisoformat(at) < now for at in expiries)


def match_resume(
    pending: Sequence[Mapping[str, Any]], entries: Sequence[ResumeEntryIn], now: dt.datetime
) -> tuple[list[ResumeDecision], list[str]]:
    """Decisions for every pending interrupt, in order, and the entry ids that matched none (ignored)."""
    by_id = {entry.interrupt_id: entry for entry in entries}
    decisions: list[ResumeDecision] = []
    for stored in pending:
        interrupt = msgspec.convert(stored, Interrupt)
        entry = by_id.get(interrupt.id)
        if entry is None:
            raise Unprocessable(
                f"Interrupt {interrupt.id} is still open: answer it in 'resume' (resolved or cancelled).",
                code="interrupt_unanswered",
                field="resume",
                extra={"interruptId": interrupt.id},
            )
        if interrupt.expires_at and dt.datetime.fromisoformat(interrupt.expires_at) < now:
            raise Unprocessable(
                f"Interrupt {interrupt.id} expired at {interrupt.expires_at}; start a new run instead.",
                code="interrupt_expired",
                field="resume",
                extra={"interruptId": interrupt.id},
            )
        call = (interrupt.metadata or {}).get(TOOL_CALL_KEY, {})
        decisions.append(
            ResumeDecision(
                interrupt_id=interrupt.id,
                tool_call_id=interrupt.tool_call_id or "",
                tool_name=str(call.get("name", "")),
                arguments=_arguments(entry, str(call.get("arguments", "")))
                if interrupt.reason not in QUESTION_REASONS
                else str(call.get("arguments", "")),
                status=entry.status,
                reason=_reason(entry),
                answer=question_answer(interrupt, entry) if interrupt.reason in QUESTION_REASONS else None,
            )
        )
    known = {d.interrupt_id for d in decisions}
    return decisions, [entry.interrupt_id for entry in entries if entry.interrupt_id not in known]


def _reason(entry: ResumeEntryIn) -> str | None:
    payload = entry.payload
    reason = payload.get("reason") if entry.status == "cancelled" and isinstance(payload, dict) else None
    return reason.strip() or None if isinstance(reason, str) else None


def _arguments(entry: ResumeEntryIn, original: str) -> str:
    """The original arguments, or the ones a resolved payload gives instead (an approved edit)."""
    if entry.status != "resolved" or not isinstance(entry.payload, dict):
        return original
    edited = entry.payload.get("arguments")
    if edited is None:
        return original
    if not isinstance(edited, dict):
        raise Unprocessable(
            "A resolved payload's 'arguments' must be an object.", code="validation_failed", field="resume"
        )
    return json.dumps(edited, separators=(",", ":"))


def question_answer(interrupt: Interrupt, entry: ResumeEntryIn) -> Answer:
    """A resume entry as the answer to a server's question: ``cancelled`` is ``cancel``; ``resolved``
    is ``payload.action`` (``accept`` when absent, or ``decline``) with ``payload.content`` (the form's
    fields, checked against its schema)."""
    try:
        given = answer_from(entry.status, entry.payload)
    except ValueError as exc:
        raise Unprocessable(str(exc), code="validation_failed", field="resume") from None
    if given.action == "accept":
        problem = form_problem(interrupt.response_schema, given.content)
        if problem is not None:
            raise Unprocessable(
                f"The answer to interrupt {interrupt.id} does not fit its form: {problem}.",
                code="validation_failed",
                field="resume",
                extra={"interruptId": interrupt.id},
            )
    return given
