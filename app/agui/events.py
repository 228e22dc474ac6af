"""AG-UI 1.0 events as msgspec structs: camelCase, optional fields omitted (never ``null``).

Every optional field defaults to ``None`` so ``omit_defaults`` drops exactly the absent ones;
fields that are required but may be ``null`` (``CUSTOM.value``) have no default and are always sent.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

import msgspec

from iris.providers.wire import WireStruct

PROTOCOL_VERSION = "1.0"


def now_ms() -> int:
    """AG-UI timestamps: integer milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


class TokenUsage(WireStruct, omit_defaults=True, kw_only=True):
    """Usage of one provider+model in a run; unknown counts are absent, never 0."""

    provider: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None


class Interrupt(WireStruct, omit_defaults=True, kw_only=True):
    """Why a run stopped to ask (tool approval, …)."""

    id: str
    reason: str
    message: str | None = None
    tool_call_id: str | None = None
    response_schema: dict[str, Any] | None = None
    expires_at: str | None = None
    metadata: dict[str, Any] | None = None


class _Outcome(WireStruct, tag_field="type", omit_defaults=True, kw_only=True):
    pass


class SuccessOutcome(_Outcome, tag="success", kw_only=True):
    pending_tool_call_ids: list[str] | None = None


class InterruptOutcome(_Outcome, tag="interrupt", kw_only=True):
    interrupts: list[Interrupt]


class CancelledOutcome(_Outcome, tag="cancelled", kw_only=True):
    pass


Outcome = SuccessOutcome | InterruptOutcome | CancelledOutcome


class Event(WireStruct, tag_field="type", omit_defaults=True, kw_only=True):
    """The envelope every event shares."""

    timestamp: int | None = None
    metadata: dict[str, Any] | None = None


class RunStarted(Event, tag="RUN_STARTED", kw_only=True):
    thread_id: str
    run_id: str
    protocol_version: str | None = None
    parent_run_id: str | None = None


class RunFinished(Event, tag="RUN_FINISHED", kw_only=True):
    thread_id: str
    run_id: str
    outcome: Outcome | None = None
    usage: list[TokenUsage] | None = None


class RunError(Event, tag="RUN_ERROR", kw_only=True):
    message: str
    code: str | None = None
    usage: list[TokenUsage] | None = None


class TextMessageStart(Event, tag="TEXT_MESSAGE_START", kw_only=True):
    message_id: str
    role: Literal["assistant"] | None = None  # absent means assistant


class TextMessageContent(Event, tag="TEXT_MESSAGE_CONTENT", kw_only=True):
    message_id: str
    delta: str


class TextMessageEnd(Event, tag="TEXT_MESSAGE_END", kw_only=True):
    message_id: str


class ToolCallStart(Event, tag="TOOL_CALL_START", kw_only=True):
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str | None = None


class ToolCallArgs(Event, tag="TOOL_CALL_ARGS", kw_only=True):
    tool_call_id: str
    delta: str


class ToolCallEnd(Event, tag="TOOL_CALL_END", kw_only=True):
    tool_call_id: str


class ToolCallResult(Event, tag="TOOL_CALL_RESULT", kw_only=True):
    message_id: str
    tool_call_id: str
    content: str
    role: Literal["tool"] | None = None


class ReasoningStart(Event, tag="REASONING_START", kw_only=True):
    message_id: str


class ReasoningEnd(Event, tag="REASONING_END", kw_only=True):
    message_id: str


class ReasoningMessageStart(Event, tag="REASONING_MESSAGE_START", kw_only=True):
    message_id: str
    role: Literal["reasoning"]  # required on the wire, so no default (omit_defaults would drop it)


class ReasoningMessageContent(Event, tag="REASONING_MESSAGE_CONTENT", kw_only=True):
    message_id: str
    delta: str


class ReasoningMessageEnd(Event, tag="REASONING_MESSAGE_END", kw_only=True):
    message_id: str


class ReasoningEncryptedValue(Event, tag="REASONING_ENCRYPTED_VALUE", kw_only=True):
    """A vendor's opaque reasoning artefact: ``subtype`` says whether ``entity_id`` is a reasoning
    message or a tool call."""

    subtype: Literal["tool-call", "message"]
    entity_id: str
    encrypted_value: str


class Custom(Event, tag="CUSTOM", kw_only=True):
    name: str
    value: Any  # required; null is allowed


JsonPointer = Annotated[str, msgspec.Meta(pattern=r"^(/([^/~]|~[01])*)*$")]
"""An RFC 6901 pointer: empty (the whole document) or slash-prefixed tokens."""


class _PatchOperation(WireStruct, tag_field="op", kw_only=True):
    path: JsonPointer


class AddOperation(_PatchOperation, tag="add", kw_only=True):
    value: Any  # required; null is a value to add


class ReplaceOperation(_PatchOperation, tag="replace", kw_only=True):
    value: Any


class RemoveOperation(_PatchOperation, tag="remove", kw_only=True):
    pass


PatchOperation = AddOperation | ReplaceOperation | RemoveOperation
"""The RFC 6902 operations Iris sends (AG-UI allows move, copy and test too)."""


class ActivitySnapshot(Event, tag="ACTIVITY_SNAPSHOT", kw_only=True):
    """An activity message's whole content (``replace`` absent: it overwrites what was there)."""

    message_id: str
    activity_type: str
    content: dict[str, Any]
    replace: bool | None = None


class ActivityDelta(Event, tag="ACTIVITY_DELTA", kw_only=True):
    """A change to an activity message's content, as a JSON Patch against it."""

    message_id: str
    activity_type: str
    patch: list[PatchOperation]


AgUiEvent = (
    RunStarted
    | RunFinished
    | RunError
    | TextMessageStart
    | TextMessageContent
    | TextMessageEnd
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolCallResult
    | ReasoningStart
    | ReasoningEnd
    | ReasoningMessageStart
    | ReasoningMessageContent
    | ReasoningMessageEnd
    | ReasoningEncryptedValue
    | Custom
    | ActivitySnapshot
    | ActivityDelta
)

TERMINAL_EVENTS: tuple[type[RunFinished], type[RunError]] = (RunFinished, RunError)
"""What ends a run, for ``isinstance``. A tuple made once: ``RunFinished | RunError`` written in a call
builds a union object each time it runs (with an ``AttributeError`` raised and caught inside), and
these checks run for every event."""

OPENING_EVENTS: tuple[type[TextMessageStart], type[ReasoningStart], type[ReasoningMessageStart]] = (
    TextMessageStart,
    ReasoningStart,
    ReasoningMessageStart,
)
"""Events that open what their first content follows at once: they need no socket write of their own
(``RunChannel.publish``'s ``urgent``)."""

_encoder = msgspec.json.Encoder()


def encode_event(event: AgUiEvent) -> bytes:
    """The event's JSON, as it goes into a ``data:`` line."""
    return _encoder.encode(event)
