"""Thread ids as clients send them: opaque strings echoed byte for byte on every surface."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.agui import check_stream, parse_sse
from tests.support.run_fixtures import Stored
from tests.support.runs import run, run_input, upload, user_message

Client = AsyncTestClient[Litestar]

IDS = [
    "thread_abc123",
    "76DFC56F-4A3B-4C2D-9E1F-0123456789AB",  # what Swift's UUID().uuidString gives
    "T:" + "a.B-c_" * 21,  # 128 characters, every kind the alphabet allows
]


def _thread_ids(events: list[dict[str, Any]]) -> set[str]:
    return {e["threadId"] for e in events if "threadId" in e}


@pytest.mark.parametrize("thread", IDS, ids=["plain", "upper-uuid", "128-chars"])
async def test_agent_runs_upload_history_and_reattach_echo_the_id(
    client: Client, alice: dict[str, str], stored: Stored, thread: str
) -> None:
    assert len(IDS[2]) == 128
    image = await upload(client, alice, thread)
    assert image["threadId"] == thread
    body = run_input(thread, user_message("what is this?", image["parts"]["agui"]))
    events = await run(client, alice, body)
    assert _thread_ids(events) == {thread}
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_FINISHED"

    again = await run(client, alice, run_input(thread, user_message("and again")))  # the same thread
    assert _thread_ids(again) == {thread}
    assert len(await stored.messages(thread)) == 4

    page = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()
    assert page["threadId"] == thread
    assert [m["role"] for m in page["messages"]] == ["user", "assistant", "user", "assistant"]
    ag_ui = (await client.get(f"/agent/threads/{thread}/messages?format=ag-ui", headers=alice)).json()
    assert ag_ui["threadId"] == thread

    replay = await client.get(f"/agent/runs/{body['runId']}/events?after=0", headers=alice)
    assert replay.status_code == 200
    replayed = [frame.data for frame in parse_sse(replay.content)]
    assert _thread_ids(replayed) == {thread}

    # Another spelling is another thread: ids are compared exactly, never case-folded.
    other = thread.swapcase()
    missing = await client.get(f"/agent/threads/{other}/messages", headers=alice)
    assert missing.status_code == 404


@pytest.mark.parametrize("thread", IDS, ids=["plain", "upper-uuid", "128-chars"])
async def test_the_chat_surface_echoes_the_session_id(
    client: Client, alice: dict[str, str], thread: str
) -> None:
    image = await upload(client, alice, thread)
    response = await client.post(
        "/api/agents/default/chat",
        json={"sessionId": thread, "parts": [{"type": "text", "text": "hi"}, image["parts"]["chat"]]},
        headers=alice,
    )
    assert response.status_code == 200, response.text
    events = check_stream(response.content)
    assert _thread_ids(events) == {thread}

    listed = (await client.get("/api/agents/default/sessions", headers=alice)).json()["sessions"]
    assert [s["id"] for s in listed] == [thread]
    history = await client.get(f"/api/agents/default/sessions/{thread}/messages", headers=alice)
    assert history.json()["sessionId"] == thread
    idle = await client.get(f"/api/agents/default/chat/stream?sessionId={thread}", headers=alice)
    assert idle.status_code == 204  # nothing runs: re-attach found the session by its exact id


@pytest.mark.parametrize("bad", ["x" * 129, "a/b", "thread id", "ä"])
async def test_ids_outside_the_alphabet_are_refused_everywhere(
    client: Client, alice: dict[str, str], stored: Stored, bad: str
) -> None:
    runs = await client.post("/agent/runs", json=run_input(bad, user_message("hi")), headers=alice)
    assert runs.status_code == 422
    assert (runs.json()["code"], runs.json()["field"]) == ("invalid_thread_id", "threadId")
    chat = await client.post(
        "/api/agents/default/chat", json={"sessionId": bad, "content": "hi"}, headers=alice
    )
    assert chat.status_code == 422
    assert (chat.json()["code"], chat.json()["field"]) == ("invalid_thread_id", "sessionId")
    files = await client.post(
        "/api/files", files={"file": ("a.png", b"x", "image/png")}, data={"threadId": bad}, headers=alice
    )
    assert files.status_code == 422
    assert files.json()["code"] == "invalid_thread_id"
    assert await stored.counts() == (0, 0, 0, 0)


async def test_a_new_chat_session_gets_a_uuid_it_keeps(client: Client, alice: dict[str, str]) -> None:
    response = await client.post("/api/agents/default/chat", json={"content": "hi"}, headers=alice)
    session = check_stream(response.content)[0]["threadId"]
    assert str(uuid.UUID(session)) == session
