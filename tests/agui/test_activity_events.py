"""A running call's activity (app/runs/engine/tool_activity.py) as the events say it: a snapshot first, then
JSON Patches that rebuild the same content, throttled to the latest values, nothing for a call that reports
nothing, nothing after the call ended; and every event valid for ag-ui-protocol's strict oracle."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from iris.app.agui.events import AgUiEvent, encode_event
from iris.app.runs.engine.tool_activity import MAX_LOG_LINES, ToolActivity, await_reporting
from tests.support.activity import apply_activity
from tests.support.agui import validate_event


def wire(events: list[AgUiEvent]) -> list[dict[str, Any]]:
    out = [msgspec.json.decode(encode_event(event)) for event in events]
    for event in out:
        validate_event(event)
    return out


async def reported(steps: int, *, pause: float, log_lines: int = 0) -> tuple[list[dict[str, Any]], str]:
    """A call that reports ``steps`` times (and logs), run the way the tool loop runs it."""
    activity = ToolActivity("call-1", "counter")
    sent: list[AgUiEvent] = []

    async def emit(event: AgUiEvent) -> None:
        sent.append(event)

    async def call() -> str:
        for step in range(1, steps + 1):
            await activity.report(step, steps, f"step {step}")
            for line in range(log_lines):
                activity.log("info", f"line {step}.{line}", "counter")
            await asyncio.sleep(pause)
        return "done"

    answer = await await_reporting(asyncio.ensure_future(call()), activity, emit)
    last = activity.finish("succeeded")
    await activity.report(99, 99, "too late")
    assert activity.pending() is None
    return wire([*sent, *([last] if last else [])]), answer


async def test_a_snapshot_then_deltas_that_rebuild_the_content() -> None:
    events, answer = await reported(3, pause=0.3, log_lines=1)
    assert answer == "done"
    assert events[0]["type"] == "ACTIVITY_SNAPSHOT"
    assert "replace" not in events[0]  # absent: it overwrites
    assert {e["type"] for e in events[1:]} == {"ACTIVITY_DELTA"}
    assert {e["activityType"] for e in events} == {"iris/toolProgress"}
    final = apply_activity(events)
    assert final == {
        "toolCallId": "call-1",
        "toolName": "counter",
        "status": "succeeded",
        "progress": 3,
        "total": 3,
        "message": "step 3",
        "logs": [{"level": "info", "message": f"line {n}.0", "logger": "counter"} for n in (1, 2, 3)],
    }


async def test_fast_reports_are_throttled_to_the_latest() -> None:
    events, _ = await reported(200, pause=0.001)
    assert len(events) < 20
    final = apply_activity(events)
    assert (final["progress"], final["message"], final["status"]) == (200, "step 200", "succeeded")


async def test_log_lines_keep_the_newest() -> None:
    events, _ = await reported(2, pause=0.25, log_lines=MAX_LOG_LINES)
    final = apply_activity(events)
    assert len(final["logs"]) == MAX_LOG_LINES
    assert final["logs"][-1]["message"] == f"line 2.{MAX_LOG_LINES - 1}"


async def test_a_call_that_reports_nothing_sends_nothing() -> None:
    events, _ = await reported(0, pause=0)
    assert events == []


async def test_cancelling_the_wait_cancels_the_call() -> None:
    activity = ToolActivity("call-2", "slow")
    call = asyncio.ensure_future(asyncio.sleep(60))

    async def emit(event: AgUiEvent) -> None:
        pass

    waiting = asyncio.ensure_future(await_reporting(call, activity, emit))
    await asyncio.sleep(0.05)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    assert call.cancelled()
