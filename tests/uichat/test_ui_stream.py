"""The translator's edges that a live run on the local model does not reach: a resumed run re-attached
in a new message (its call announced before its output, which the SDK requires), arguments that are not
JSON, a cancelled run, a stream cut short, and tool progress whose activity this stream saw only part of."""

from __future__ import annotations

from typing import Any

from iris.app.agui.ui_stream import UiChunks

STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "run-1"}
RESULT = {
    "type": "TOOL_CALL_RESULT",
    "messageId": "m",
    "toolCallId": "call-1",
    "content": "done",
    "metadata": {"iris/toolAgentOutput": {"toolName": "wipe", "status": "succeeded", "content": []}},
}


def kinds(chunks: list[dict[str, Any]]) -> list[str]:
    return [c["type"] for c in chunks]


def test_a_resumed_run_re_attached_announces_its_call_before_the_output() -> None:
    chunks = UiChunks()
    out = chunks.feed(STARTED) + chunks.feed(RESULT)
    assert out[0] == {"type": "start", "messageId": "run-1"}
    assert kinds(out)[1:] == ["start-step", "tool-input-available", "tool-output-available"]
    assert out[2]["toolName"] == "wipe"


def test_a_resumed_run_continuing_a_message_sends_only_the_output() -> None:
    chunks = UiChunks("answer-1")
    out = chunks.feed(STARTED) + chunks.feed(RESULT)
    assert out[0] == {"type": "start", "messageId": "answer-1"}
    assert kinds(out)[1:] == ["tool-output-available"]


def test_arguments_that_are_not_json_are_a_tool_input_error() -> None:
    chunks = UiChunks()
    chunks.feed(STARTED)
    chunks.feed({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "wipe"})
    chunks.feed({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{not"})
    (error,) = chunks.feed({"type": "TOOL_CALL_END", "toolCallId": "c"})
    assert (error["type"], error["input"]) == ("tool-input-error", "{not")


def test_a_cancelled_run_aborts_and_a_cut_stream_ends_with_one_error() -> None:
    chunks = UiChunks()
    chunks.feed(STARTED)
    ended = chunks.feed(
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "cancelled"}}
    )
    assert ended == [{"type": "abort", "reason": "cancelled"}]
    assert chunks.over
    cut = UiChunks()
    cut.feed(STARTED)
    assert kinds(cut.cut_short()) == ["error"]


def activity(kind: str, message_id: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "messageId": message_id, "activityType": "iris/toolProgress", **fields}


def test_tool_progress_applies_its_patches_and_skips_what_it_cannot_place() -> None:
    chunks = UiChunks()
    chunks.feed(STARTED)
    content = {"toolCallId": "c", "toolName": "count", "status": "running", "progress": 1, "message": "one"}
    (first,) = chunks.feed(activity("ACTIVITY_SNAPSHOT", "a", content=content))
    assert first == {"type": "data-tool-progress", "id": "c", "data": content}
    patch = [
        {"op": "replace", "path": "/progress", "value": 2},
        {"op": "remove", "path": "/message"},
        {"op": "add", "path": "/logs", "value": []},
        {"op": "add", "path": "/logs/-", "value": {"level": "info", "message": "two"}},
    ]
    (second,) = chunks.feed(activity("ACTIVITY_DELTA", "a", patch=patch))
    assert second["data"] == {
        "toolCallId": "c",
        "toolName": "count",
        "status": "running",
        "progress": 2,
        "logs": [{"level": "info", "message": "two"}],
    }
    assert content["progress"] == 1  # the snapshot's content is not changed in place
    # A delta whose snapshot came before this stream joined, a patch that does not fit, another activity.
    assert chunks.feed(activity("ACTIVITY_DELTA", "b", patch=patch)) == []
    unfit = [{"op": "replace", "path": "/x", "value": 1}]
    assert chunks.feed(activity("ACTIVITY_DELTA", "a", patch=unfit)) == []
    assert chunks.feed({**activity("ACTIVITY_SNAPSHOT", "d", content=content), "activityType": "other"}) == []
