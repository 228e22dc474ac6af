"""Runs that outlive one request: frontend tools across runs, approval interrupts and resume,
re-attaching to a run's stream, and cancelling it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agui import check_lifecycle, check_stream, parse_sse_with_comments
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, run, run_input, upload, user_message
from tests.support.waits import REQUEST_SECONDS

Client = AsyncTestClient[Litestar]
PICK = {
    "name": "pick_colour",
    "description": "Ask the user to pick a colour in the UI.",
    "parameters": {"type": "object", "properties": {"hint": {"type": "string"}}},
}


# -- frontend tools ---------------------------------------------------------------------------------


async def test_a_frontend_tool_round_trips_across_two_runs(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    ask = user_message('use tool pick_colour {"hint": "warm"}')
    first = await run(client, alice, run_input(thread, ask, tools=[PICK]))

    start = of_type(first, "TOOL_CALL_START")[0]
    assert start["toolCallName"] == "pick_colour"
    assert of_type(first, "TOOL_CALL_RESULT") == []  # never executed by the server
    assert first[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [start["toolCallId"]]}

    answer = {"id": "t1", "role": "tool", "toolCallId": start["toolCallId"], "content": "orange"}
    second = await run(client, alice, run_input(thread, ask, answer, tools=[PICK]))

    assert "Tool pick_colour returned: orange" in answer_text(second)
    assert second[-1]["outcome"] == {"type": "success"}
    rows = await stored.messages(thread)
    assert [r.role for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[2].content == "orange"
    assert rows[2].external_id == "t1"
    history = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()["messages"]
    assert history[2]["toolCallId"] == start["toolCallId"]


async def test_an_answer_to_no_pending_call_is_refused(client: Client, alice: dict[str, str]) -> None:
    thread = str(uuid.uuid4())
    await run(client, alice, run_input(thread, user_message("hello")))
    stray = {"id": "t1", "role": "tool", "toolCallId": "call_nope", "content": "x"}
    response = await client.post("/agent/runs", json=run_input(thread, stray), headers=alice)
    assert response.status_code == 422
    assert response.json()["code"] == "tool_call_unknown"


async def test_a_client_tool_may_not_shadow_a_server_tool(client: Client, alice: dict[str, str]) -> None:
    body = run_input(str(uuid.uuid4()), user_message("hi"), tools=[{**PICK, "name": "image_info"}])
    response = await client.post("/agent/runs", json=body, headers=alice)
    assert response.status_code == 422
    assert response.json()["code"] == "tool_name_conflict"


# -- approval interrupts ----------------------------------------------------------------------------


async def _interrupted(client: Client, headers: dict[str, str]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A thread whose run stopped to ask before deleting its image: ``(thread, upload, interrupt)``."""
    thread = str(uuid.uuid4())
    image = await upload(client, headers, thread)
    ask = user_message(f'use tool delete_attachment {{"uploadId": "{image["id"]}"}}', image["parts"]["agui"])
    events = await run(client, headers, run_input(thread, ask))
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    assert of_type(events, "TOOL_CALL_RESULT") == []  # not run before approval
    return thread, image, outcome["interrupts"][0]


async def test_a_tool_needing_approval_ends_the_run_with_an_interrupt(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread, _, interrupt = await _interrupted(client, alice)

    assert interrupt["reason"] == "tool_approval"
    assert interrupt["toolCallId"]
    assert "delete_attachment" in interrupt["message"]
    assert interrupt["responseSchema"]["type"] == "object"
    assert interrupt["expiresAt"]
    history = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()["messages"]
    assert history[0]["content"][1]["type"] == "binary"  # the image is still there
    run_row = await stored.run(await _run_id(stored, thread))
    assert run_row is not None
    assert run_row.status == "interrupted"
    assert run_row.pending_interrupts is not None
    assert run_row.pending_interrupts[0]["id"] == interrupt["id"]

    blocked = await client.post(
        "/agent/runs", json=run_input(thread, user_message("and now?")), headers=alice
    )
    assert blocked.status_code == 422
    assert blocked.json()["code"] == "interrupt_pending"


async def _run_id(stored: Stored, thread: str) -> str:
    rows = await stored.messages(thread)
    assert rows[0].run_id is not None
    return await stored.run_external_id(rows[0].run_id)


async def test_resume_resolved_runs_the_tool_and_persists_the_answer(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread, image, interrupt = await _interrupted(client, alice)
    body = run_input(thread, resume=[{"interruptId": interrupt["id"], "status": "resolved"}])

    response = await client.post("/agent/runs/resume", json=body, headers=alice)
    assert response.status_code == 200, response.text
    events = check_stream(response.content)

    result = of_type(events, "TOOL_CALL_RESULT")[0]
    assert result["toolCallId"] == interrupt["toolCallId"]
    output = result["metadata"]["iris/toolAgentOutput"]
    assert output["status"] == "succeeded"
    assert output["result"] == {"deleted": image["id"], "name": "red.png"}
    assert "Tool delete_attachment returned" in answer_text(events)
    assert events[-1]["outcome"] == {"type": "success"}

    rows = await stored.messages(thread)
    assert [r.role for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[2].meta["tool_agent_output"] == output
    download = await client.get(image["url"].split("8000", 1)[1])
    assert download.status_code == 404  # the stored object is gone
    history = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()["messages"]
    assert history[0]["content"][1] == {"type": "text", "text": "[image deleted: red.png]"}
    again = await client.post(
        "/agent/runs/resume", json=run_input(thread, resume=body["resume"]), headers=alice
    )
    assert again.status_code == 422  # nothing left to resume, and nothing new to answer


async def test_resume_cancelled_skips_the_tool_and_tells_the_model(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread, image, interrupt = await _interrupted(client, alice)
    body = run_input(
        thread,
        resume=[
            {"interruptId": interrupt["id"], "status": "cancelled"},
            {"interruptId": "int_unknown", "status": "resolved"},
        ],
    )
    events = await run(client, alice, body)

    assert events[0]["metadata"]["iris/ignoredResumeEntries"] == ["int_unknown"]
    output = of_type(events, "TOOL_CALL_RESULT")[0]["metadata"]["iris/toolAgentOutput"]
    assert output["status"] == "cancelled"
    assert output["result"] is None
    assert output["resultSummary"] == "The user declined this call; delete_attachment was not run."
    told = answer_text(events)  # the local model repeats what it was told
    assert "The user declined this call" in told
    assert "failed" not in told  # a decline is the user's answer, not the tool's failure
    download = await client.get(image["url"].split("8000", 1)[1])
    assert download.status_code == 200  # still there
    assert [r.role for r in await stored.messages(thread)] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ("{}", "'uploadId' is a required property"),
        ('{"uploadId": 7}', "7 is not of type 'string' (at uploadId)"),
        ('{"uploadId": "x", "no": 1}', "Additional properties are not allowed ('no' was unexpected)"),
    ],
)
async def test_a_call_its_schema_refuses_goes_back_to_the_model_never_to_the_user(
    client: Client, alice: dict[str, str], stored: Stored, arguments: str, problem: str
) -> None:
    thread = str(uuid.uuid4())
    image = await upload(client, alice, thread)
    ask = user_message(f"use tool delete_attachment {arguments}", image["parts"]["agui"])
    events = await run(client, alice, run_input(thread, ask))

    assert events[-1]["outcome"] == {"type": "success"}  # no approval asked
    output = of_type(events, "TOOL_CALL_RESULT")[0]["metadata"]["iris/toolAgentOutput"]
    assert output["status"] == "failed"
    assert output["error"] == f"invalid arguments: {problem}"
    assert f"Tool delete_attachment failed: invalid arguments: {problem}" in answer_text(events)
    download = await client.get(image["url"].split("8000", 1)[1])
    assert download.status_code == 200  # never run
    assert [r.role for r in await stored.messages(thread)] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize(
    ("entries", "code"),
    [
        ([], "resume_required"),
        ([{"interruptId": "int_other", "status": "resolved"}], "interrupt_unanswered"),
    ],
)
async def test_resume_must_answer_every_open_interrupt(
    client: Client, alice: dict[str, str], stored: Stored, entries: list[dict[str, Any]], code: str
) -> None:
    thread, image, _ = await _interrupted(client, alice)
    response = await client.post("/agent/runs/resume", json=run_input(thread, resume=entries), headers=alice)
    assert response.status_code == 422
    assert response.json()["code"] == code
    download = await client.get(image["url"].split("8000", 1)[1])
    assert download.status_code == 200  # never acted on
    assert [r.role for r in await stored.messages(thread)] == ["user", "assistant"]


async def test_an_expired_interrupt_cannot_be_resumed(settings: Settings, alice: dict[str, str]) -> None:
    """An expired interrupt is refused as an answer, and no longer holds the thread: a new message
    runs (the unanswered call is told to the model as such) and the thread is free again."""
    app = create_app(msgspec.structs.replace(settings, interrupt_ttl_seconds=0), environ={})
    async with AsyncTestClient(app=app) as client:
        thread, _, interrupt = await _interrupted(client, alice)
        await asyncio.sleep(1.1)  # expiry has a resolution of one second
        body = run_input(thread, resume=[{"interruptId": interrupt["id"], "status": "resolved"}])
        response = await client.post("/agent/runs/resume", json=body, headers=alice)
        assert response.status_code == 422
        assert response.json()["code"] == "interrupt_expired"
        moved_on = await client.post(
            "/agent/runs", json=run_input(thread, user_message("and now?")), headers=alice
        )
        assert moved_on.status_code == 200, moved_on.text
        assert check_stream(moved_on.content)[-1]["outcome"]["type"] == "success"
        again = await client.post(
            "/agent/runs", json=run_input(thread, user_message("still?")), headers=alice
        )
        assert again.status_code == 200, again.text


# -- re-attach and cancel (a real socket: the client really disconnects) -----------------------------


async def _read_until(response: httpx.Response, marker: bytes) -> tuple[bytes, AsyncIterator[bytes]]:
    chunks = response.aiter_bytes()
    seen = b""
    async for chunk in chunks:
        seen += chunk
        if marker in seen and seen.endswith(b"\n\n"):
            break
    return seen, chunks


async def test_re_attach_after_a_dropped_connection_gets_every_remaining_event_once(
    base_url: str, alice: dict[str, str], auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    body = run_input(thread, user_message(" ".join(f"w{i}" for i in range(30))), model="local/slow")
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        async with http.stream("POST", "/agent/runs", json=body, headers=alice) as response:
            seen, _ = await _read_until(response, b"TEXT_MESSAGE_CONTENT")
        first, _ = parse_sse_with_comments(seen)
        last_id = first[-1].id
        assert last_id is not None

        other = await http.get(f"/agent/runs/{body['runId']}/events", headers=auth("mallory"))
        assert other.status_code == 404

        rest = await http.get(
            f"/agent/runs/{body['runId']}/events", headers={**alice, "Last-Event-ID": last_id}
        )
        assert rest.status_code == 200
        later, _ = parse_sse_with_comments(rest.content)
        replay = await http.get(f"/agent/runs/{body['runId']}/events?after=0", headers=alice)

    events = [f.data for f in first] + [f.data for f in later]
    ids = [int(f.id or 0) for f in first + later]
    assert ids == list(range(1, len(ids) + 1))  # each event exactly once, in order
    check_lifecycle(events)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert check_stream(replay.content) == events  # a finished run replays fully, then closes
    logged = await stored.events(body["runId"])
    assert [e["sequence"] for e in logged] == ids


async def test_re_attach_at_or_past_a_finished_runs_last_event_ends_at_once(
    base_url: str, alice: dict[str, str]
) -> None:
    """A client that got everything but the close (``Last-Event-ID`` = the terminal event's id), or
    asks past the end, gets an empty stream that ends — not pings for ever."""
    body = run_input(str(uuid.uuid4()), user_message("w1 w2 w3"), model="local/slow")
    async with httpx.AsyncClient(base_url=base_url, timeout=REQUEST_SECONDS) as http:
        events = check_stream((await http.post("/agent/runs", json=body, headers=alice)).content)
        path = f"/agent/runs/{body['runId']}/events"
        full, _ = parse_sse_with_comments((await http.get(path, headers=alice)).content)
        last_id = full[-1].id
        assert last_id is not None
        at_end = await asyncio.wait_for(
            http.get(path, headers={**alice, "Last-Event-ID": last_id}), REQUEST_SECONDS
        )
        past_end = await asyncio.wait_for(
            http.get(path, headers=alice, params={"after": 10**9}), REQUEST_SECONDS
        )

    assert events[-1]["type"] == "RUN_FINISHED"
    for response in (at_end, past_end):
        assert response.status_code == 200
        assert parse_sse_with_comments(response.content)[0] == []


async def test_re_attach_past_a_live_runs_last_event_gets_nothing_and_ends_with_the_run(
    base_url: str, alice: dict[str, str]
) -> None:
    """Asked past the end while the run is still going (served from memory on its process), the
    stream hands out no event numbered at or below ``after`` — as for a finished run — and ends when
    the run does: a client can wait for a run's end this way."""
    body = run_input(
        str(uuid.uuid4()), user_message(" ".join(f"w{i}" for i in range(20))), model="local/slow"
    )
    path = f"/agent/runs/{body['runId']}/events"
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=REQUEST_SECONDS) as http,
        http.stream("POST", "/agent/runs", json=body, headers=alice) as started,
    ):
        chunks = started.aiter_bytes()
        assert b"RUN_STARTED" in await anext(chunks)
        past_end = await http.get(path, headers=alice, params={"after": 10**9})
        rest = b"".join([chunk async for chunk in chunks])
    assert past_end.status_code == 200
    assert parse_sse_with_comments(past_end.content)[0] == []
    assert b"RUN_FINISHED" in rest  # it ended with the run, not before


async def test_cancel_mid_stream_closes_everything_and_keeps_the_partial_answer(
    base_url: str, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    body = run_input(thread, user_message(" ".join(f"w{i}" for i in range(100))), model="local/slow")
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        async with http.stream("POST", "/agent/runs", json=body, headers=alice) as response:
            seen, chunks = await _read_until(response, b"TEXT_MESSAGE_CONTENT")
            cancelled = await http.post(f"/agent/runs/{body['runId']}/cancel", headers=alice)
            assert cancelled.status_code == 202
            assert cancelled.json() == {"runId": body["runId"], "status": "cancelling"}
            seen += b"".join([chunk async for chunk in chunks])
        again = await http.post(f"/agent/runs/{body['runId']}/cancel", headers=alice)

    events = check_stream(seen)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"] == {"type": "cancelled"}
    worker = of_type(events, "TEXT_MESSAGE_END")[-1]["metadata"]["iris/workerAgentOutput"]
    assert worker["finishReason"] == "cancelled"
    assert not answer_text(events).endswith("w99")  # stopped early
    assert again.status_code == 409
    assert again.json()["code"] == "run_not_running"

    run_row = await stored.run(body["runId"])
    assert run_row is not None
    assert run_row.status == "cancelled"
    rows = await stored.messages(thread)
    assert [r.role for r in rows] == ["user", "assistant"]
    assert rows[1].content == worker["answer"]
    assert rows[1].meta["worker_agent_output"]["finishReason"] == "cancelled"
