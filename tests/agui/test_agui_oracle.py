"""The AG-UI oracle (tests/support/agui.py) must fail on every rule it claims, or SSE tests prove nothing."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.support.agui import (
    EVENT_MODELS,
    SseFrame,
    check_lifecycle,
    check_stream,
    parse_sse,
    parse_sse_with_comments,
    validate_event,
)

Event = dict[str, Any]

STARTED: Event = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1", "protocolVersion": "1.0"}
USAGE: list[Event] = [
    {"provider": "openai", "model": "gpt-x", "inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
]
FINISHED: Event = {
    "type": "RUN_FINISHED",
    "threadId": "t1",
    "runId": "r1",
    "outcome": {"type": "success"},
    "usage": USAGE,
}
GOOD: list[Event] = [
    STARTED,
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant", "metadata": {"iris/turn": 1}},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Looking it up"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1", "metadata": {"iris/workerAgentOutput": {"x": None}}},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "lookup", "parentMessageId": "m1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q": '},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '"iris"}'},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "TOOL_CALL_RESULT", "messageId": "tm1", "toolCallId": "c1", "content": "42", "role": "tool"},
    FINISHED,
]


def good() -> list[Event]:
    """A fresh copy of the good run, so a test can break one event without touching the others."""
    return copy.deepcopy(GOOD)


def sse(events: list[Event], *, ids: bool = False) -> bytes:
    """Frame events the way the server must: ``data: <json>\\n\\n``, LF only."""
    frames = []
    for number, event in enumerate(events, start=1):
        head = f"id: {number}\n" if ids else ""
        frames.append(f"{head}data: {json.dumps(event)}\n\n")
    return "".join(frames).encode()


def run(*middle: Event, finished: Event | None = None) -> list[Event]:
    """RUN_STARTED, ``middle``, then a terminal event (a plain success RUN_FINISHED by default)."""
    end = finished if finished is not None else {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}
    return [copy.deepcopy(STARTED), *copy.deepcopy(list(middle)), end]


def tool_call(call: str = "c1", name: str = "lookup") -> list[Event]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": name},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": call},
    ]


def result(call: str = "c1", message: str = "tm1") -> Event:
    return {"type": "TOOL_CALL_RESULT", "messageId": message, "toolCallId": call, "content": "ok"}


def finished(outcome: Event | None = None, **extra: Any) -> Event:
    event: Event = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", **extra}
    if outcome is not None:
        event["outcome"] = outcome
    return event


# ------------------------------------------------------------------------------------------------ good


def test_good_stream_passes_and_round_trips() -> None:
    events = check_stream(sse(good()))
    assert events == GOOD


def test_good_stream_with_ids_and_pings_passes() -> None:
    body = b": ping\n\n" + sse(good(), ids=True).replace(b"\n\n", b"\n\n: ping\n\n", 3)
    frames, comments = parse_sse_with_comments(body)
    assert comments == 4
    assert [frame.id for frame in frames] == [str(n) for n in range(1, len(GOOD) + 1)]
    assert check_stream(body) == GOOD


def test_frame_fields() -> None:
    body = b'id: 7\nevent: ignored\n: inline comment\ndata:{"type":"RUN_ERROR","message":"x"}\n\n'
    frames, comments = parse_sse_with_comments(body)
    assert frames == [
        SseFrame(
            id="7",
            data={"type": "RUN_ERROR", "message": "x"},
            raw='id: 7\nevent: ignored\n: inline comment\ndata:{"type":"RUN_ERROR","message":"x"}',
        )
    ]
    assert comments == 1


def test_multiline_data_is_joined_with_newlines() -> None:
    body = b'data: {"type": "RUN_ERROR",\ndata:  "message": "two lines"}\n\n'
    (frame,) = parse_sse(body)
    assert frame.data == {"type": "RUN_ERROR", "message": "two lines"}
    assert frame.raw.count("\n") == 1


def test_every_event_type_has_a_model() -> None:
    assert len(EVENT_MODELS) == 31
    assert {"RUN_STARTED", "TOOL_CALL_RESULT", "SUBAGENT_ERROR"} <= set(EVENT_MODELS)


@pytest.mark.parametrize("event", GOOD, ids=lambda event: str(event["type"]))
def test_good_events_validate(event: Event) -> None:
    validate_event(event)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "CUSTOM", "name": "iris/x", "value": None},
        {"type": "STATE_SNAPSHOT", "snapshot": None},
        {"type": "RAW", "event": None},
        {"type": "RAW", "event": {"nested": None}, "rawEvent": {"provider": None}},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": None}]},
        {"type": "STEP_STARTED", "stepName": "s", "metadata": {"iris/k": None}},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": {"answer": None}},
        {"type": "RUN_ERROR", "message": "boom", "code": "provider_error", "timestamp": 1_700_000_000_000},
    ],
    ids=lambda event: str(event["type"]),
)
def test_nulls_where_the_schema_allows_them(event: Event) -> None:
    validate_event(event)


# --------------------------------------------------------------------------------------------- framing


def test_crlf_framing_fails() -> None:
    body = sse(good()).replace(b"\n", b"\r\n")
    with pytest.raises(AssertionError, match=r"contains '\\r'.*CRLF"):
        parse_sse(body)
    with pytest.raises(AssertionError, match=r"CRLF"):
        check_stream(body)


def test_lone_cr_fails() -> None:
    with pytest.raises(AssertionError, match=r"'\\r' at byte offset 3 \(line 2\)"):
        parse_sse(b": \n\r\n")


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b'data: {"type":"RUN_ERROR","message":"x"}\n', r"not terminated by a blank line"),
        (b'data: {"type":"RUN_ERROR","message":"x"}', r"does not end with a newline"),
        (b": ping\n", r"not terminated by a blank line"),
        (b"data: not json\n\n", r"data is not JSON"),
        (b"data: [1, 2]\n\n", r"not a JSON object"),
        (b'data: {"message": "x"}\n\n', r"non-empty string 'type'"),
        (b'data: {"type": ""}\n\n', r"non-empty string 'type'"),
        (b'data: {"type": 5}\n\n', r"non-empty string 'type'"),
        (b'data: {"type": "RUN_ERROR", "type": "RUN_ERROR"}\n\n', r"duplicate JSON key 'type'"),
        (b'data: {"type": "CUSTOM", "name": "n", "value": NaN}\n\n', r"NaN"),
        (b"id: 1\n\n", r"frame has no data"),
        (b'dta: {"type": "RUN_ERROR"}\n\n', r"unknown SSE field 'dta'"),
        (b'id: 1\nid: 2\ndata: {"type": "RUN_ERROR"}\n\n', r"more than one id"),
        (b'data: {"type": "\xff"}\n\n', r"not UTF-8"),
        (b'\xef\xbb\xbfdata: {"type": "RUN_ERROR"}\n\n', r"byte-order mark"),
    ],
)
def test_bad_framing_fails(body: bytes, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        parse_sse(body)


@pytest.mark.parametrize(
    ("ids", "match"),
    [
        (["1", "2", "2"], r"frame #2: id 2 is not greater than frame #1's id 2"),
        (["3", "2"], r"frame #1: id 2 is not greater"),
        (["1", "x"], r"frame #1: id 'x' is not a decimal integer"),
        (["1", "-2"], r"not a decimal integer"),
        (["01", "2"], r"not a decimal integer"),
    ],
)
def test_ids_must_strictly_increase(ids: list[str], match: str) -> None:
    events = run({"type": "CUSTOM", "name": "iris/x", "value": 1})
    body = "".join(f"id: {i}\ndata: {json.dumps(e)}\n\n" for i, e in zip([*ids, "99"], events, strict=False))
    with pytest.raises(AssertionError, match=match):
        check_stream(body.encode())


def test_ids_may_be_partial() -> None:
    events = run()
    body = f"id: 5\ndata: {json.dumps(events[0])}\n\ndata: {json.dumps(events[1])}\n\n".encode()
    assert check_stream(body) == events


# -------------------------------------------------------------------------------------------- schema


def test_unknown_type_fails() -> None:
    with pytest.raises(AssertionError, match=r"unknown event type 'THINKING_START'"):
        validate_event({"type": "THINKING_START"})


@pytest.mark.parametrize(
    ("event", "match"),
    [
        ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1"}, r"(?s)delta\n  Field required"),
        ({"type": "TOOL_CALL_START", "toolCallId": "c1"}, r"(?s)toolCallName\n  Field required"),
        ({"type": "RUN_STARTED", "threadId": "t1"}, r"(?s)runId\n  Field required"),
        ({"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c"}, r"(?s)content\n  Field required"),
        ({"type": "CUSTOM", "name": "n"}, r"(?s)value\n  Field required"),
    ],
)
def test_missing_required_field_fails(event: Event, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        validate_event(event)


@pytest.mark.parametrize(
    ("event", "match"),
    [
        (
            {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": None},
            r"role: null for an optional field",
        ),
        ({"type": "TEXT_MESSAGE_END", "messageId": "m1", "timestamp": None}, r"timestamp: null"),
        ({"type": "TEXT_MESSAGE_END", "messageId": "m1", "metadata": None}, r"metadata: null"),
        ({"type": "TEXT_MESSAGE_END", "messageId": "m1", "rawEvent": None}, r"rawEvent: null"),
        (
            {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "n", "parentMessageId": None},
            "parent",
        ),
        ({**FINISHED, "outcome": None}, r"outcome: null"),
        (
            {**FINISHED, "outcome": {"type": "success", "pendingToolCallIds": None}},
            r"outcome.pendingToolCall",
        ),
        ({**FINISHED, "usage": [{**USAGE[0], "model": None}]}, r"usage\[0\]\.model: null"),
        ({"type": "RUN_ERROR", "message": "x", "code": None}, r"code: null"),
        (
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "m",
                "toolCallId": "c",
                "content": [{"type": "image", "source": {"type": "url", "value": "u", "mimeType": None}}],
            },
            r"content\[0\]\.source\.mimeType: null",
        ),
        (
            {
                "type": "RUN_FINISHED",
                "threadId": "t",
                "runId": "r",
                "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "r", "message": None}]},
            },
            r"outcome\.interrupts\[0\]\.message: null",
        ),
    ],
)
def test_null_optional_field_fails(event: Event, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        validate_event(event)


def test_null_optional_in_good_stream_fails() -> None:
    events = good()
    events[4]["parentMessageId"] = None
    with pytest.raises(
        AssertionError, match=r"event #4 TOOL_CALL_START: invalid event.*parentMessageId: null"
    ):
        check_stream(sse(events))


@pytest.mark.parametrize(
    ("event", "match"),
    [
        (
            {"type": "TEXT_MESSAGE_END", "messageId": "m1", "workerAgentOutput": "x"},
            r"unknown top-level field\(s\) \['workerAgentOutput'\]",
        ),
        (
            {"type": "TEXT_MESSAGE_START", "message_id": "m1"},
            r"unknown top-level field\(s\) \['message_id'\]",
        ),
        ({**FINISHED, "outcome": {"type": "success", "note": "x"}}, r"outcome: unknown field 'note'"),
        ({**FINISHED, "outcome": {"type": "cancelled", "pendingToolCallIds": []}}, r"unknown field 'pending"),
        ({**FINISHED, "usage": [{**USAGE[0], "costUsd": 1}]}, r"usage\[0\]: unknown field 'costUsd'"),
        ({**FINISHED, "usage": [{**USAGE[0], "input_tokens": 1}]}, r"unknown field 'input_tokens'"),
    ],
)
def test_unknown_field_fails(event: Event, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        validate_event(event)


@pytest.mark.parametrize(
    ("event", "match"),
    [
        ({"type": "TEXT_MESSAGE_END", "messageId": 1}, r"messageId\n  Input should be a valid string"),
        ({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": "17"}, r"valid integer"),
        ({"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": 1.5}, r"valid integer"),
        ({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "tool"}, r"role\n  Input should be"),
        ({**FINISHED, "usage": [{"inputTokens": -1}]}, r"greater than or equal to 0"),
        ({**FINISHED, "outcome": {"type": "done"}}, r"outcome"),
        ({**FINISHED, "outcome": {"type": "interrupt", "interrupts": []}}, r"at least 1 item"),
        ({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"}, r"chunk events are not modelled"),
    ],
)
def test_wrong_values_fail(event: Event, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        validate_event(event)


# ----------------------------------------------------------------------------------------- lifecycle


def test_run_error_alone_passes() -> None:
    check_lifecycle([{"type": "RUN_ERROR", "message": "rejected before the run began", "code": "bad_input"}])


def test_run_error_may_leave_things_open() -> None:
    check_lifecycle(
        [
            copy.deepcopy(STARTED),
            {"type": "STEP_STARTED", "stepName": "think"},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
            {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "lookup"},
            {"type": "RUN_ERROR", "message": "provider died"},
        ]
    )


def test_standalone_events_reopening_steps_reasoning_subagents_pass() -> None:
    check_lifecycle(
        run(
            {"type": "STEP_STARTED", "stepName": "a"},
            {"type": "STEP_STARTED", "stepName": "b"},
            {"type": "STEP_FINISHED", "stepName": "a"},
            {"type": "STATE_SNAPSHOT", "snapshot": {"k": 1}},
            {"type": "CUSTOM", "name": "iris/progress", "value": 0.5},
            {"type": "REASONING_START", "messageId": "r1"},
            {"type": "REASONING_MESSAGE_START", "messageId": "rm1", "role": "reasoning"},
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm1", "delta": "hmm"},
            {"type": "REASONING_MESSAGE_END", "messageId": "rm1"},
            {"type": "REASONING_END", "messageId": "r1"},
            {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "worker"},
            {"type": "SUBAGENT_ERROR", "subagentRunId": "s1", "message": "gave up"},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
            {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": ""},
            {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
            {"type": "STEP_FINISHED", "stepName": "b"},
        )
    )


def _fails(events: list[Event], match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        check_lifecycle(events)


def test_empty_stream_fails() -> None:
    _fails([], r"empty stream")


def test_first_event_must_start_the_run() -> None:
    _fails(good()[1:], r"event #0 TEXT_MESSAGE_START: the first event must be RUN_STARTED or RUN_ERROR")


@pytest.mark.parametrize("version", [None, "0.9", "1.1", "1"])
def test_protocol_version_must_be_1_0(version: str | None) -> None:
    events = good()
    if version is None:
        del events[0]["protocolVersion"]
    else:
        events[0]["protocolVersion"] = version
    _fails(events, r"event #0 RUN_STARTED: RUN_STARTED.protocolVersion must be '1.0'")


def test_truncated_stream_fails() -> None:
    _fails(good()[:-1], r"event #8 TOOL_CALL_RESULT: stream ends without RUN_FINISHED or RUN_ERROR")


def test_event_after_terminal_fails() -> None:
    _fails(
        [*good(), {"type": "CUSTOM", "name": "x", "value": 1}], r"event #10 CUSTOM: event after the terminal"
    )


def test_second_terminal_fails() -> None:
    _fails(
        [*good(), {"type": "RUN_ERROR", "message": "late"}], r"event #10 RUN_ERROR: event after the terminal"
    )


def test_run_error_first_then_more_fails() -> None:
    _fails(
        [{"type": "RUN_ERROR", "message": "x"}, copy.deepcopy(STARTED)], r"event #1 RUN_STARTED: event after"
    )


def test_second_run_started_fails() -> None:
    events = good()
    events.insert(3, copy.deepcopy(STARTED))
    _fails(events, r"event #3 RUN_STARTED: a second RUN_STARTED")


@pytest.mark.parametrize("key", ["threadId", "runId"])
def test_run_finished_ids_must_match(key: str) -> None:
    events = good()
    events[-1][key] = "other"
    _fails(events, rf"event #9 RUN_FINISHED: RUN_FINISHED.{key} 'other' differs from RUN_STARTED.{key}")


def test_invalid_event_is_reported_with_its_index() -> None:
    events = good()
    events[2]["extra"] = 1
    _fails(events, r"event #2 TEXT_MESSAGE_CONTENT: invalid event: .*unknown top-level field")


@pytest.mark.parametrize(
    ("middle", "match"),
    [
        (
            [
                {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
                {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
            ],
            r"event #2 TEXT_MESSAGE_START: text message 'm1' is already open",
        ),
        (
            [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x"}],
            r"event #1 TEXT_MESSAGE_CONTENT: text message 'm1' is not open",
        ),
        (
            [{"type": "TEXT_MESSAGE_END", "messageId": "m1"}],
            r"event #1 TEXT_MESSAGE_END: text message 'm1' is not",
        ),
        (
            [
                {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
                {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "late"},
            ],
            r"event #3 TEXT_MESSAGE_CONTENT: text message 'm1' is not open",
        ),
        (
            [
                {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
                {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
                {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "user"},
            ],
            r"event #3 TEXT_MESSAGE_START: text message 'm1' reopened with role='user', first opened with",
        ),
        (
            [{"type": "TEXT_MESSAGE_START", "messageId": "m1"}],
            r"event #2 RUN_FINISHED: text message\(s\) still open at RUN_FINISHED: \['m1'\]",
        ),
        (
            [{"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm1", "delta": "x"}],
            r"event #1 REASONING_MESSAGE_CONTENT: reasoning message 'rm1' is not open",
        ),
        (
            [{"type": "REASONING_START", "messageId": "r1"}],
            r"event #2 RUN_FINISHED: reasoning span\(s\) still open",
        ),
    ],
)
def test_text_message_triads(middle: list[Event], match: str) -> None:
    _fails(run(*middle), match)


@pytest.mark.parametrize(
    ("middle", "match"),
    [
        ([tool_call()[1]], r"event #1 TOOL_CALL_ARGS: tool call 'c1' is not open"),
        ([tool_call()[2]], r"event #1 TOOL_CALL_END: tool call 'c1' is not open"),
        ([*tool_call(), tool_call()[2]], r"event #4 TOOL_CALL_END: tool call 'c1' is not open"),
        ([tool_call()[0], tool_call()[0]], r"event #2 TOOL_CALL_START: tool call 'c1' is already open"),
        ([*tool_call(), tool_call()[1]], r"event #4 TOOL_CALL_ARGS: tool call 'c1' is not open"),
        (tool_call()[:2], r"event #3 RUN_FINISHED: tool call\(s\) still open at RUN_FINISHED: \['c1'\]"),
        (
            [*tool_call(), *tool_call(name="other")],
            r"event #4 TOOL_CALL_START: tool call 'c1' reopened with toolCallName='other'",
        ),
    ],
)
def test_tool_call_triads(middle: list[Event], match: str) -> None:
    _fails(run(*middle), match)


@pytest.mark.parametrize(
    ("middle", "match"),
    [
        (
            [*tool_call()[:2], result()],
            r"event #3 TOOL_CALL_RESULT: result for tool call 'c1' before its TOOL_CALL",
        ),
        (
            [*tool_call(), result(), result(message="tm2")],
            r"event #5 TOOL_CALL_RESULT: second result for tool",
        ),
        (
            [
                {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
                {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
                *tool_call(),
                result(message="m1"),
            ],
            r"event #6 TOOL_CALL_RESULT: result messageId 'm1' is the id of a streamed message",
        ),
        (
            [
                *tool_call(),
                result(message="m1"),
                {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
                {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
            ],
            r"event #5 TEXT_MESSAGE_START: messageId 'm1' is already the id of a TOOL_CALL_RESULT",
        ),
        (
            [*tool_call("c1"), *tool_call("c2"), result("c1", "tm"), result("c2", "tm")],
            r"event #8 TOOL_CALL_RESULT: result messageId 'tm' already used",
        ),
    ],
)
def test_tool_call_results(middle: list[Event], match: str) -> None:
    _fails(run(*middle), match)


@pytest.mark.parametrize(
    ("middle", "match"),
    [
        ([{"type": "STEP_FINISHED", "stepName": "s"}], r"event #1 STEP_FINISHED: step 's' is not open"),
        (
            [{"type": "STEP_STARTED", "stepName": "s"}, {"type": "STEP_STARTED", "stepName": "s"}],
            r"event #2 STEP_STARTED: step 's' is already open",
        ),
        (
            [{"type": "STEP_STARTED", "stepName": "s"}],
            r"event #2 RUN_FINISHED: step\(s\) still open .*\['s'\]",
        ),
        (
            [{"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "w"}],
            r"event #2 RUN_FINISHED: subagent\(s\) still running",
        ),
        (
            [{"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"}],
            r"event #1 SUBAGENT_FINISHED: subagent run 's1' is not running",
        ),
    ],
)
def test_steps_and_subagents(middle: list[Event], match: str) -> None:
    _fails(run(*middle), match)


R_START: Event = {"type": "REASONING_START", "messageId": "r1"}
R_END: Event = {"type": "REASONING_END", "messageId": "r1"}
RM_START: Event = {"type": "REASONING_MESSAGE_START", "messageId": "rm1", "role": "reasoning"}
RM_END: Event = {"type": "REASONING_MESSAGE_END", "messageId": "rm1"}


def _encrypted(subtype: str, entity: str) -> Event:
    return {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": subtype,
        "entityId": entity,
        "encryptedValue": "x",
    }


def test_reasoning_with_encrypted_values_passes() -> None:
    check_lifecycle(
        run(
            R_START,
            RM_START,
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm1", "delta": "hmm"},
            RM_END,
            _encrypted("message", "rm1"),
            R_END,
            {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "lookup"},
            {"type": "TOOL_CALL_END", "toolCallId": "c1"},
            _encrypted("tool-call", "c1"),
            {"type": "TOOL_CALL_RESULT", "messageId": "tm1", "toolCallId": "c1", "content": "42"},
        )
    )


@pytest.mark.parametrize(
    ("middle", "match"),
    [
        ([RM_START, RM_END], r"event #1 REASONING_MESSAGE_START: a reasoning message outside any open"),
        ([R_START, RM_START, R_END], r"event #3 REASONING_END: reasoning span closed with its message"),
        ([R_START, RM_START, RM_END], r"event #4 RUN_FINISHED: reasoning span\(s\) still open"),
        ([_encrypted("message", "nope")], r"encrypted value for message 'nope', never started"),
        ([_encrypted("tool-call", "c9")], r"encrypted value for tool call 'c9', never started"),
    ],
)
def test_reasoning_rules(middle: list[Event], match: str) -> None:
    _fails(run(*middle), match)


def test_a_result_may_answer_a_call_of_an_earlier_run() -> None:
    check_lifecycle(run(result()))


def test_interrupt_outcome_passes_with_an_unanswered_call() -> None:
    interrupt = {
        "id": "i1",
        "reason": "tool_approval",
        "toolCallId": "c1",
        "responseSchema": {"type": "object"},
    }
    check_lifecycle(run(*tool_call(), finished=finished({"type": "interrupt", "interrupts": [interrupt]})))


def test_interrupt_ids_must_be_unique() -> None:
    interrupts = [{"id": "i1", "reason": "a"}, {"id": "i1", "reason": "b"}]
    _fails(
        run(finished=finished({"type": "interrupt", "interrupts": interrupts})),
        r"event #1 RUN_FINISHED: interrupt ids are not unique: \['i1', 'i1'\]",
    )


def test_empty_interrupts_fail() -> None:
    _fails(run(finished=finished({"type": "interrupt", "interrupts": []})), r"event #1 RUN_FINISHED: invalid")


def test_pending_tool_calls_listed_exactly_pass() -> None:
    calls = [*tool_call("c1"), *tool_call("c2"), *tool_call("c3"), result("c2")]
    check_lifecycle(run(*calls, finished=finished({"type": "success", "pendingToolCallIds": ["c1", "c3"]})))


def test_cancelled_run_may_leave_calls_unanswered() -> None:
    check_lifecycle(run(*tool_call(), finished=finished({"type": "cancelled"}, usage=USAGE)))


@pytest.mark.parametrize(
    ("calls", "outcome", "match"),
    [
        (tool_call(), None, r"success with unanswered tool call\(s\) \['c1'\]: pendingToolCallIds must list"),
        (tool_call(), {"type": "success"}, r"unanswered tool call\(s\) \['c1'\].*\(got \[\]\)"),
        (tool_call(), {"type": "success", "pendingToolCallIds": []}, r"unanswered tool call\(s\) \['c1'\]"),
        (
            [*tool_call(), result()],
            {"type": "success", "pendingToolCallIds": ["c1"]},
            r"'c1', which has a result",
        ),
        (tool_call(), {"type": "success", "pendingToolCallIds": ["c1", "c9"]}, r"'c9', never started here"),
        (
            tool_call(),
            {"type": "success", "pendingToolCallIds": ["c1", "c1"]},
            r"has duplicates: \['c1', 'c1'\]",
        ),
        (
            [*tool_call("c1"), *tool_call("c2")],
            {"type": "success", "pendingToolCallIds": ["c1"]},
            r"unanswered tool call\(s\) \['c1', 'c2'\].*\(got \['c1'\]\)",
        ),
        (
            [*tool_call("c1"), *tool_call("c2")],
            {"type": "success", "pendingToolCallIds": ["c2", "c1"]},
            r"in the order they were made",
        ),
    ],
)
def test_pending_tool_call_ids(calls: list[Event], outcome: Event | None, match: str) -> None:
    _fails(run(*calls, finished=finished(outcome)), rf"RUN_FINISHED: .*{match}")
