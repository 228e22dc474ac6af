"""A strict AG-UI 1.0 oracle for SSE tests: wire framing, per-event schema and the run lifecycle.

The reference client (``@ag-ui/client`` 1.0) is lenient in places a producer must not rely on (it strips
unknown fields, drops unknown event types, resolves a truncated stream silently) and fatal in others (CRLF
framing, ``null`` where a field is optional). This module fails on all of them, so a server test that passes
here is a stream the reference client accepts without warnings.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ag_ui._generated.models import (
    AddOperation,
    CopyOperation,
    MoveOperation,
    RemoveOperation,
    ReplaceOperation,
    TestOperation,
)
from ag_ui.core import Event
from pydantic import BaseModel, ValidationError

__all__ = [
    "EVENT_MODELS",
    "SseFrame",
    "check_lifecycle",
    "check_stream",
    "parse_sse",
    "parse_sse_with_comments",
    "validate_event",
]

_SSE_FIELDS = frozenset({"data", "id", "event", "retry"})
_SSE_ID = re.compile(r"0|[1-9][0-9]*")
_EXCERPT = 400

# RFC 6902 says members an operation does not define are ignored, so the schema leaves patch ops open.
# (ag_ui.core does not re-export these classes, hence the import from the generated module.)
_OPEN_MODELS: tuple[type[BaseModel], ...] = (
    AddOperation,
    RemoveOperation,
    ReplaceOperation,
    MoveOperation,
    CopyOperation,
    TestOperation,
)

# Chunk events have lane-closing rules this oracle does not model; Iris emits triads only.
_CHUNK_TYPES = frozenset({"TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK"})


def _event_models() -> dict[str, type[BaseModel]]:
    """Map each wire ``type`` to its pydantic class, read from the ``Event`` union itself."""
    union = typing.get_args(Event)[0]
    models: dict[str, type[BaseModel]] = {}
    for model in typing.get_args(union):
        default = model.model_fields["type"].default
        models[str(getattr(default, "value", default))] = model
    return models


EVENT_MODELS: dict[str, type[BaseModel]] = _event_models()
"""Every AG-UI 1.0 event class by its wire ``type`` (31 entries)."""


@dataclass(frozen=True)
class SseFrame:
    """One dispatched SSE event: its ``id:`` (if any), the decoded ``data:`` object and the frame's text."""

    id: str | None
    data: dict[str, Any]
    raw: str


# --------------------------------------------------------------------------------------------- framing


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json`` keeps the last of duplicate keys silently; a producer sending them is ambiguous."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        assert key not in result, f"duplicate JSON key {key!r}"
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    """Python's ``json`` accepts NaN/Infinity; ``JSON.parse`` in the reference client does not."""
    raise AssertionError(f"non-standard JSON constant {name} (JSON.parse rejects it)")


def _decode_payload(payload: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(payload, object_pairs_hook=_reject_duplicate_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"{where}: data is not JSON ({exc}): {payload[:_EXCERPT]!r}") from None
    except AssertionError as exc:
        raise AssertionError(f"{where}: {exc}: {payload[:_EXCERPT]!r}") from None
    assert isinstance(data, dict), f"{where}: data is not a JSON object: {payload[:_EXCERPT]!r}"
    kind = data.get("type")
    problem = f"{where}: data has no non-empty string 'type' (the client drops it): {payload[:_EXCERPT]!r}"
    assert isinstance(kind, str), problem
    assert kind, problem
    return data


def _frame(lines: list[str], first_line: int) -> tuple[SseFrame | None, int]:
    """Turn one blank-line-terminated block into a frame (or nothing, for a comment-only block)."""
    where = f"SSE frame at line {first_line}"
    comments = 0
    data_lines: list[str] = []
    frame_id: str | None = None
    fields_seen = False
    for line in lines:
        if line.startswith(":"):
            comments += 1
            continue
        fields_seen = True
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        assert name in _SSE_FIELDS, f"{where}: unknown SSE field {name!r} in line {line[:_EXCERPT]!r}"
        if name == "data":
            data_lines.append(value)
        elif name == "id":
            assert frame_id is None, f"{where}: more than one id: line"
            frame_id = value
    if not fields_seen:
        return None, comments
    raw = "\n".join(lines)
    assert data_lines, f"{where}: frame has no data: line: {raw[:_EXCERPT]!r}"
    data = _decode_payload("\n".join(data_lines), where)
    return SseFrame(id=frame_id, data=data, raw=raw), comments


def parse_sse_with_comments(body: bytes) -> tuple[list[SseFrame], int]:
    """Parse a ``text/event-stream`` body strictly; return its frames and how many ``:`` comment lines it had.

    Mirrors the reference client (frames end at a blank line, ``data:`` lines lose one leading space
    and join with ``\\n``, the payload must be a JSON object with a non-empty ``type``) but fails where
    it would tolerate or break: any ``\\r`` (the client breaks on CRLF), a last frame with no blank line
    after it, invalid UTF-8, a BOM, an unknown field name, a frame without ``data:``, duplicate JSON
    keys and NaN/Infinity.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AssertionError(f"SSE body is not UTF-8: {exc}") from None
    assert not text.startswith("\ufeff"), "SSE body starts with a byte-order mark"
    if "\r" in text:
        offset = text.index("\r")
        line_no = text.count("\n", 0, offset) + 1
        raise AssertionError(
            f"SSE body contains '\\r' at byte offset {offset} (line {line_no}): frames must use LF only, "
            f"the AG-UI reference client fails on CRLF: {text[max(0, offset - 80) : offset + 20]!r}"
        )
    *lines, tail = text.split("\n")
    assert tail == "", f"SSE body does not end with a newline; unterminated last line: {tail[:_EXCERPT]!r}"

    frames: list[SseFrame] = []
    comments = 0
    block: list[str] = []
    block_start = 1
    for number, line in enumerate(lines, start=1):
        if line:
            if not block:
                block_start = number
            block.append(line)
            continue
        if block:
            frame, block_comments = _frame(block, block_start)
            comments += block_comments
            if frame is not None:
                frames.append(frame)
            block = []
    assert not block, (
        f"SSE frame at line {block_start} is not terminated by a blank line (\\n\\n): "
        f"{chr(10).join(block)[:_EXCERPT]!r}"
    )
    return frames, comments


def parse_sse(body: bytes) -> list[SseFrame]:
    """Parse a ``text/event-stream`` body strictly (see :func:`parse_sse_with_comments`)."""
    return parse_sse_with_comments(body)[0]


# ---------------------------------------------------------------------------------------- event schema


def _wire_keys(model: type[BaseModel]) -> set[str]:
    """The camelCase keys a model accepts on the wire (its aliases; snake_case names are not wire names)."""
    return {info.alias or name for name, info in model.model_fields.items()}


def _walk(value: Any, path: str, raw: Any) -> Iterable[str]:
    """Yield problems pydantic lets through: explicit ``null`` for an optional field, and unknown fields.

    The walk follows validated models only, so opaque JSON (``metadata`` values, ``rawEvent``, ``result``,
    ``CUSTOM.value``, activity ``content``, patch values...) is never inspected, as the schema intends.
    """
    if isinstance(value, BaseModel):
        model = type(value)
        raw_dict = raw if isinstance(raw, dict) else {}
        if value.model_extra and not isinstance(value, _OPEN_MODELS):
            for key in sorted(value.model_extra):
                known = ", ".join(sorted(_wire_keys(model)))
                yield f"{path or '<event>'}: unknown field {key!r} for {model.__name__} (known: {known})"
        for name, info in model.model_fields.items():
            key = info.alias or name
            if key not in raw_dict:
                continue
            child_path = f"{path}.{key}" if path else key
            if raw_dict[key] is None and not info.is_required():
                yield f"{child_path}: null for an optional field (AG-UI: omit it instead)"
                continue
            yield from _walk(getattr(value, name), child_path, raw_dict[key])
    elif isinstance(value, list) and isinstance(raw, list):
        for index, (item, raw_item) in enumerate(zip(value, raw, strict=False)):
            yield from _walk(item, f"{path}[{index}]", raw_item)
    elif isinstance(value, dict) and isinstance(raw, dict):
        for key, item in value.items():
            if isinstance(item, (BaseModel, list)):
                yield from _walk(item, f"{path}.{key}", raw.get(key))


def _excerpt(event: Any) -> str:
    try:
        text = json.dumps(event, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(event)
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"


def validate_event(event: dict[str, Any]) -> None:
    """Validate one wire event against the ag-ui-protocol 1.0 models, closed and null-free.

    The SDK models keep unknown fields (``extra="allow"``), accept snake_case names and ``None`` for
    optionals, and coerce in lax mode; the 1.0 schema allows none of that, so this validates in strict JSON
    mode by alias only, then walks the result for unknown keys and explicit ``null`` optionals.
    """
    assert isinstance(event, dict), f"event is not an object: {_excerpt(event)}"
    kind = event.get("type")
    assert isinstance(kind, str), f"event has no string 'type': {_excerpt(event)}"
    assert kind, f"event has an empty 'type': {_excerpt(event)}"
    model = EVENT_MODELS.get(kind)
    assert model is not None, f"unknown event type {kind!r} (not one of the 31 AG-UI 1.0 types)"
    if kind in _CHUNK_TYPES:
        raise AssertionError(f"{kind}: chunk events are not modelled by this oracle (Iris emits triads)")
    unknown = sorted(set(event) - _wire_keys(model))
    assert not unknown, (
        f"{kind}: unknown top-level field(s) {unknown} (the 1.0 schema closes events; use metadata): "
        f"{_excerpt(event)}"
    )
    try:
        payload = json.dumps(event, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"{kind}: not JSON-serialisable ({exc}): {_excerpt(event)}") from None
    try:
        validated = model.model_validate_json(payload, strict=True, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise AssertionError(f"{kind}: {exc}\nevent: {_excerpt(event)}") from None
    problems = list(_walk(validated, "", event))
    assert not problems, f"{kind}: " + "; ".join(problems) + f"\nevent: {_excerpt(event)}"


# ------------------------------------------------------------------------------------------- lifecycle


@dataclass
class _Triads:
    """Open/closed bookkeeping for one kind of START…END item, keyed by its id."""

    label: str
    open: dict[str, dict[str, Any]] = field(default_factory=dict)
    first_start: dict[str, dict[str, Any]] = field(default_factory=dict)
    ended: list[str] = field(default_factory=list)


class _Run:
    """The lifecycle state machine for one run; ``fail`` names the offending event."""

    def __init__(self) -> None:
        self.index = 0
        self.event: dict[str, Any] = {}
        self.started: dict[str, Any] | None = None
        self.terminal: int | None = None
        self.text = _Triads("text message")
        self.tools = _Triads("tool call")
        self.reasoning = _Triads("reasoning message")
        self.spans = _Triads("reasoning span")
        self.span_of: dict[str, str] = {}  # reasoning messageId -> the span it was opened in
        self.steps: set[str] = set()
        self.subagents: set[str] = set()
        self.results: dict[str, str] = {}  # toolCallId -> result messageId
        self.result_message_ids: set[str] = set()

    def fail(self, problem: str) -> typing.NoReturn:
        raise AssertionError(
            f"event #{self.index} {self.event.get('type')}: {problem}\nevent: {_excerpt(self.event)}"
        )

    def check(self, condition: bool, problem: str) -> None:
        if not condition:
            self.fail(problem)

    def step(self, index: int, event: dict[str, Any]) -> None:
        self.index, self.event = index, event
        try:
            validate_event(event)
        except AssertionError as exc:
            self.fail(f"invalid event: {exc}")
        kind = event["type"]
        if self.terminal is not None:
            self.fail(f"event after the terminal event #{self.terminal} (one run per stream)")
        if index == 0:
            self.check(
                kind in ("RUN_STARTED", "RUN_ERROR"), "the first event must be RUN_STARTED or RUN_ERROR"
            )
        handler = getattr(self, f"on_{kind.lower()}", None)
        if handler is not None:
            handler(event)

    # run boundaries

    def on_run_started(self, event: dict[str, Any]) -> None:
        self.check(self.started is None, "a second RUN_STARTED (one run per stream; nested runs are illegal)")
        self.check(
            event.get("protocolVersion") == "1.0",
            f"RUN_STARTED.protocolVersion must be '1.0', got {event.get('protocolVersion')!r}",
        )
        self.started = event

    def on_run_error(self, event: dict[str, Any]) -> None:
        self.terminal = self.index

    def on_run_finished(self, event: dict[str, Any]) -> None:
        assert self.started is not None  # the first-event rule guarantees it
        for key in ("threadId", "runId"):
            self.check(
                event[key] == self.started[key],
                f"RUN_FINISHED.{key} {event[key]!r} differs from RUN_STARTED.{key} {self.started[key]!r}",
            )
        for triads in (self.text, self.tools, self.reasoning, self.spans):
            self.check(
                not triads.open, f"{triads.label}(s) still open at RUN_FINISHED: {sorted(triads.open)}"
            )
        self.check(not self.steps, f"step(s) still open at RUN_FINISHED: {sorted(self.steps)}")
        self.check(not self.subagents, f"subagent(s) still running at RUN_FINISHED: {sorted(self.subagents)}")
        outcome = event.get("outcome") or {"type": "success"}
        if outcome["type"] == "interrupt":
            ids = [interrupt["id"] for interrupt in outcome["interrupts"]]
            self.check(bool(ids), "an interrupt outcome needs at least one interrupt")
            self.check(len(ids) == len(set(ids)), f"interrupt ids are not unique: {ids}")
        elif outcome["type"] == "success":
            self._check_pending(outcome)
        self.terminal = self.index

    def _check_pending(self, outcome: dict[str, Any]) -> None:
        ended = set(self.tools.ended)
        unanswered = [call for call in self.tools.first_start if call in ended and call not in self.results]
        pending: list[str] = outcome.get("pendingToolCallIds") or []
        self.check(len(pending) == len(set(pending)), f"pendingToolCallIds has duplicates: {pending}")
        for call in pending:
            self.check(
                call in self.tools.first_start, f"pendingToolCallIds names {call!r}, never started here"
            )
            self.check(call in ended, f"pendingToolCallIds names {call!r}, which never ended")
            self.check(call not in self.results, f"pendingToolCallIds names {call!r}, which has a result")
        self.check(
            pending == unanswered,
            f"success with unanswered tool call(s) {unanswered}: pendingToolCallIds must list exactly "
            f"those, in the order they were made (got {pending})",
        )

    # text messages, reasoning messages and reasoning spans

    def _open(self, triads: _Triads, key: str, event: dict[str, Any], same: tuple[str, ...]) -> None:
        item = event[key]
        self.check(item not in triads.open, f"{triads.label} {item!r} is already open")
        original = triads.first_start.setdefault(item, event)
        for name in same:  # a reopened item must keep its identity (SPEC streaming.mdx "Reopening")
            self.check(
                event.get(name) == original.get(name),
                f"{triads.label} {item!r} reopened with {name}={event.get(name)!r}, "
                f"first opened with {original.get(name)!r}",
            )
        triads.open[item] = event

    def _extend(self, triads: _Triads, key: str) -> None:
        item = self.event[key]
        self.check(item in triads.open, f"{triads.label} {item!r} is not open")

    def _close(self, triads: _Triads, key: str) -> None:
        self._extend(triads, key)
        del triads.open[self.event[key]]
        triads.ended.append(self.event[key])

    def on_text_message_start(self, event: dict[str, Any]) -> None:
        self.check(
            event["messageId"] not in self.result_message_ids,
            f"messageId {event['messageId']!r} is already the id of a TOOL_CALL_RESULT tool message",
        )
        self._open(self.text, "messageId", event, ("role", "name"))

    def on_text_message_content(self, event: dict[str, Any]) -> None:
        self._extend(self.text, "messageId")

    def on_text_message_end(self, event: dict[str, Any]) -> None:
        self._close(self.text, "messageId")

    def on_reasoning_message_start(self, event: dict[str, Any]) -> None:
        self.check(
            event["messageId"] not in self.result_message_ids,
            f"messageId {event['messageId']!r} is already the id of a TOOL_CALL_RESULT tool message",
        )
        # A span "may contain several reasoning messages": a reasoning message lives inside one.
        self.check(bool(self.spans.open), "a reasoning message outside any open REASONING_START span")
        self._open(self.reasoning, "messageId", event, ())
        self.span_of[event["messageId"]] = list(self.spans.open)[-1]

    def on_reasoning_message_content(self, event: dict[str, Any]) -> None:
        self._extend(self.reasoning, "messageId")

    def on_reasoning_message_end(self, event: dict[str, Any]) -> None:
        self._close(self.reasoning, "messageId")

    def on_reasoning_start(self, event: dict[str, Any]) -> None:
        self._open(self.spans, "messageId", event, ())

    def on_reasoning_end(self, event: dict[str, Any]) -> None:
        inside = sorted(m for m in self.reasoning.open if self.span_of.get(m) == event["messageId"])
        self.check(not inside, f"reasoning span closed with its message(s) {inside} still open")
        self._close(self.spans, "messageId")

    def on_reasoning_encrypted_value(self, event: dict[str, Any]) -> None:
        entity = event["entityId"]
        if event["subtype"] == "tool-call":
            self.check(
                entity in self.tools.first_start, f"encrypted value for tool call {entity!r}, never started"
            )
        else:
            known = entity in self.reasoning.first_start or entity in self.text.first_start
            self.check(known, f"encrypted value for message {entity!r}, never started in this run")

    # tool calls

    def on_tool_call_start(self, event: dict[str, Any]) -> None:
        self._open(self.tools, "toolCallId", event, ("toolCallName", "parentMessageId"))

    def on_tool_call_args(self, event: dict[str, Any]) -> None:
        self._extend(self.tools, "toolCallId")

    def on_tool_call_end(self, event: dict[str, Any]) -> None:
        self._close(self.tools, "toolCallId")

    def on_tool_call_result(self, event: dict[str, Any]) -> None:
        # A result may answer a call of an earlier run (resuming after an interrupt), as the reference
        # client allows; a call of this stream must have ended first.
        call, message = event["toolCallId"], event["messageId"]
        self.check(call not in self.tools.open, f"result for tool call {call!r} before its TOOL_CALL_END")
        self.check(call not in self.results, f"second result for tool call {call!r}")
        self.check(
            message not in self.text.first_start and message not in self.reasoning.first_start,
            f"result messageId {message!r} is the id of a streamed message; a result mints its own message",
        )
        self.check(message not in self.result_message_ids, f"result messageId {message!r} already used")
        self.results[call] = message
        self.result_message_ids.add(message)

    # steps and subagents

    def on_step_started(self, event: dict[str, Any]) -> None:
        self.check(event["stepName"] not in self.steps, f"step {event['stepName']!r} is already open")
        self.steps.add(event["stepName"])

    def on_step_finished(self, event: dict[str, Any]) -> None:
        self.check(event["stepName"] in self.steps, f"step {event['stepName']!r} is not open")
        self.steps.discard(event["stepName"])

    def on_subagent_started(self, event: dict[str, Any]) -> None:
        run = event["subagentRunId"]
        self.check(run not in self.subagents, f"subagent run {run!r} is already running")
        self.subagents.add(run)

    def on_subagent_finished(self, event: dict[str, Any]) -> None:
        run = event["subagentRunId"]
        self.check(run in self.subagents, f"subagent run {run!r} is not running")
        self.subagents.discard(run)

    on_subagent_error = on_subagent_finished


def check_lifecycle(events: list[dict[str, Any]]) -> None:
    """Check that ``events`` are one complete, well-formed AG-UI 1.0 run (every event validated too).

    RUN_STARTED (protocolVersion "1.0") or RUN_ERROR first; exactly one terminal event, last; triads opened
    once and extended/closed only while open; tool results only for ended calls, once, with a fresh
    messageId; everything closed before RUN_FINISHED; interrupt ids unique; and, on success, unanswered
    tool calls listed exactly in ``pendingToolCallIds``.
    """
    assert events, "empty stream: no RUN_STARTED and no terminal event"
    run = _Run()
    for index, event in enumerate(events):
        run.step(index, event)
    if run.terminal is None:
        run.fail("stream ends without RUN_FINISHED or RUN_ERROR (a truncated run)")


def check_stream(body: bytes) -> list[dict[str, Any]]:
    """Parse an SSE body, check ``id:`` lines (when present) are strictly increasing integers, and the run.

    Returns the event dicts, so a test can go on to assert what the run said.
    """
    frames = parse_sse(body)
    previous: tuple[int, int] | None = None
    for index, frame in enumerate(frames):
        if frame.id is None:
            continue
        assert _SSE_ID.fullmatch(frame.id), f"frame #{index}: id {frame.id!r} is not a decimal integer"
        value = int(frame.id)
        if previous is not None:
            assert value > previous[1], (
                f"frame #{index}: id {value} is not greater than frame #{previous[0]}'s id {previous[1]}"
            )
        previous = (index, value)
    events = [frame.data for frame in frames]
    check_lifecycle(events)
    return events
