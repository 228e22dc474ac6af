"""Reasoning in a run: whether to ask for it, and how the provider's reasoning events become AG-UI's.

Control (:func:`reasoning_control`): ``forwardedProps.enableThinking`` (the chat body's
``enableThinking``) turns it on or off, ``forwardedProps.reasoningEffort`` picks low/medium/high; the
model's ``options`` may set defaults (``enableThinking``, ``reasoningEffort``) and a token budget
(``thinkingBudget``), which the request's own ``thinkingBudget`` (the Messages API's
``thinking.budget_tokens``) overrides. A model that cannot reason ignores the request, and the run
says so once in ``RUN_STARTED.metadata``.

Stream (:class:`ReasoningStream`): each reasoning span becomes ``REASONING_START`` →
``REASONING_MESSAGE_START/CONTENT*/END`` → ``REASONING_END``, opaque vendor blocks become
``REASONING_ENCRYPTED_VALUE`` (a signature names the reasoning message or, for a Gemini thought
signature, the tool call it rode on), and everything is kept as :class:`~providers.ReasoningPart` entries
so the next request of a tool-use loop can send it back unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

import uuid_utils

from iris.app.agui.events import (
    AgUiEvent,
    ReasoningEncryptedValue,
    ReasoningEnd,
    ReasoningMessageContent,
    ReasoningMessageEnd,
    ReasoningMessageStart,
    ReasoningStart,
)
from iris.app.errors import Unprocessable
from iris.providers import Capabilities, ReasoningEffort, ReasoningPart, ReasoningRequest
from iris.providers import ReasoningDelta as ProviderReasoningDelta
from iris.providers import ReasoningEnd as ProviderReasoningEnd
from iris.providers import ReasoningOpaque as ProviderReasoningOpaque
from iris.providers import ReasoningStart as ProviderReasoningStart

REASONING_NOTE_KEY = "iris/reasoning"
"""``RUN_STARTED.metadata`` key saying the reasoning asked for was ignored, and why."""
REASONING_KIND_KEY = "iris/reasoningKind"
"""``REASONING_ENCRYPTED_VALUE.metadata`` key: ``signature`` or ``redacted`` (never shown as text)."""
BUDGET_BY_EFFORT: Mapping[str, int] = {"low": 1024, "medium": 4096, "high": 16384}
"""The token budget for vendors that take one, when the model's options name none."""
EFFORTS: tuple[str, ...] = get_args(ReasoningEffort)
SUMMARY_CHARS = 500

ProviderReasoningEvent = (
    ProviderReasoningStart | ProviderReasoningDelta | ProviderReasoningEnd | ProviderReasoningOpaque
)


@dataclass(frozen=True, slots=True)
class ReasoningControl:
    """What a run asks of the model: a request (``None``: no reasoning) and a note when ignored."""

    request: ReasoningRequest | None = None
    ignored: str | None = None


NO_REASONING = ReasoningControl()


def reasoning_control(
    forwarded: Mapping[str, Any], options: Mapping[str, Any], caps: Capabilities, model_ref: str
) -> ReasoningControl:
    """The run's reasoning request from ``forwardedProps`` over the model's option defaults."""
    enabled = forwarded.get("enableThinking")
    if enabled is not None and not isinstance(enabled, bool):
        raise Unprocessable(
            "'enableThinking' must be true or false.",
            code="validation_failed",
            field="forwardedProps.enableThinking",
        )
    effort = forwarded.get("reasoningEffort")
    if effort is not None and effort not in EFFORTS:
        raise Unprocessable(
            f"'reasoningEffort' must be one of {', '.join(EFFORTS)}.",
            code="validation_failed",
            field="forwardedProps.reasoningEffort",
        )
    if enabled is None:  # an effort alone asks for reasoning; otherwise the model's default
        enabled = True if effort is not None else options.get("enableThinking") is True
    if not enabled:
        return ReasoningControl()
    if not caps.reasoning.supported:
        return ReasoningControl(ignored=f"{model_ref} cannot reason: reasoning was not requested")
    chosen: ReasoningEffort = effort or _option_effort(options)
    budget = forwarded.get("thinkingBudget") or options.get("thinkingBudget")
    given = isinstance(budget, int) and not isinstance(budget, bool) and budget > 0
    budget_tokens = budget if given else BUDGET_BY_EFFORT[chosen]
    return ReasoningControl(request=ReasoningRequest(effort=chosen, budget_tokens=budget_tokens))


def _option_effort(options: Mapping[str, Any]) -> ReasoningEffort:
    value = options.get("reasoningEffort")
    return value if value in EFFORTS else "medium"


@dataclass(slots=True)
class _Span:
    span_id: str
    message_id: str
    text: list[str] = field(default_factory=list)
    signature: str | None = None


@dataclass(slots=True)
class ReasoningStream:
    """One model turn's reasoning: AG-UI events out, replayable parts kept (see the module docstring)."""

    provider: str
    parts: list[ReasoningPart] = field(default_factory=list)
    _open: dict[str, _Span] = field(default_factory=dict)

    @property
    def is_open(self) -> bool:
        return bool(self._open)

    @property
    def text(self) -> str:
        return "\n\n".join(part.text for part in self.parts if part.text)

    @property
    def summary(self) -> str | None:
        """The readable reasoning, shortened for ``WorkerAgentOutput`` (redacted blocks never appear)."""
        text = self.text.strip()
        if not text:
            return None
        return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rstrip() + "…"

    def translate(self, event: ProviderReasoningEvent) -> list[AgUiEvent]:
        """The AG-UI events for one provider reasoning event."""
        if isinstance(event, ProviderReasoningStart):
            return self._start(event.id)
        if isinstance(event, ProviderReasoningDelta):
            out = [] if event.id in self._open else self._start(event.id)
            span = self._open[event.id]
            if event.delta:
                span.text.append(event.delta)
                out.append(ReasoningMessageContent(message_id=span.message_id, delta=event.delta))
            return out
        if isinstance(event, ProviderReasoningEnd):
            return self._end(event.id)
        return self._opaque(event)

    def close(self) -> list[AgUiEvent]:
        """End every open span (before the answer's text starts, and when the turn ends)."""
        return [e for reasoning_id in list(self._open) for e in self._end(reasoning_id)]

    def _start(self, reasoning_id: str) -> list[AgUiEvent]:
        if reasoning_id in self._open:
            return []
        span = _Span(span_id=str(uuid_utils.uuid7()), message_id=str(uuid_utils.uuid7()))
        self._open[reasoning_id] = span
        return [
            ReasoningStart(message_id=span.span_id),
            ReasoningMessageStart(message_id=span.message_id, role="reasoning"),
        ]

    def _end(self, reasoning_id: str) -> list[AgUiEvent]:
        span = self._open.pop(reasoning_id, None)
        if span is None:
            return []
        self.parts.append(
            ReasoningPart(provider=self.provider, text="".join(span.text), signature=span.signature)
        )
        out: list[AgUiEvent] = [ReasoningMessageEnd(message_id=span.message_id)]
        if span.signature is not None:
            out.append(_encrypted("message", span.message_id, span.signature, "signature"))
        out.append(ReasoningEnd(message_id=span.span_id))
        return out

    def _opaque(self, event: ProviderReasoningOpaque) -> list[AgUiEvent]:
        if event.kind == "signature" and event.tool_call_id is not None:
            # A Gemini thought signature on a function call: replayed on that call, announced for it.
            self.parts.append(
                ReasoningPart(provider=self.provider, signature=event.value, tool_call_id=event.tool_call_id)
            )
            return [_encrypted("tool-call", event.tool_call_id, event.value, "signature")]
        if event.kind == "signature":
            span = self._open.get(event.id)
            if span is not None:  # sent with the span's end
                span.signature = event.value
                return []
            self.parts.append(ReasoningPart(provider=self.provider, signature=event.value))
            return [_encrypted("message", str(uuid_utils.uuid7()), event.value, "signature")]
        # Redacted thinking: an empty reasoning message that only carries the opaque block.
        message_id = str(uuid_utils.uuid7())
        span_id = str(uuid_utils.uuid7())
        self.parts.append(ReasoningPart(provider=self.provider, redacted=event.value))
        return [
            ReasoningStart(message_id=span_id),
            ReasoningMessageStart(message_id=message_id, role="reasoning"),
            ReasoningMessageEnd(message_id=message_id),
            _encrypted("message", message_id, event.value, "redacted"),
            ReasoningEnd(message_id=span_id),
        ]


def _encrypted(subtype: str, entity_id: str, value: str, kind: str) -> ReasoningEncryptedValue:
    return ReasoningEncryptedValue(
        subtype=subtype,  # type: ignore[arg-type]
        entity_id=entity_id,
        encrypted_value=value,
        metadata={REASONING_KIND_KEY: kind},
    )


def stored_reasoning(part: ReasoningPart) -> dict[str, Any]:
    """A reasoning part as the assistant row stores it."""
    out: dict[str, Any] = {"type": "reasoning", "provider": part.provider, "text": part.text}
    if part.signature is not None:
        out["signature"] = part.signature
    if part.redacted is not None:
        out["redacted"] = part.redacted
    if part.tool_call_id is not None:
        out["toolCallId"] = part.tool_call_id
    return out


def reasoning_from_stored(part: Mapping[str, Any]) -> ReasoningPart:
    """A stored reasoning part back as the neutral part a provider replays."""
    return ReasoningPart(
        provider=str(part.get("provider", "")),
        text=str(part.get("text", "")),
        signature=part.get("signature"),
        redacted=part.get("redacted"),
        tool_call_id=part.get("toolCallId"),
    )
