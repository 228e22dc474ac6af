"""``POST /agent/runs`` end to end with the local model: a real uploaded PNG in, AG-UI 1.0 events out,
results in the database, history replaying the image with a fresh URL."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import msgspec
import pytest
from ag_ui.core import AgentCapabilities
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import event

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.agui import check_stream, parse_sse_with_comments
from tests.support.images import image_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, run, run_input, upload, user_message

Client = AsyncTestClient[Litestar]


@pytest.mark.parametrize("storage_kind", ["local", "s3"])  # the model gets the image out of S3 as well
async def test_local_vision_describes_the_real_uploaded_image(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    image = await upload(
        client, alice, thread, data=image_bytes("PNG", (64, 48), (30, 60, 220)), name="blue.png"
    )
    body = run_input(thread, user_message("What is in this picture?", image["parts"]["agui"]))

    events = await run(client, alice, body)

    assert events[0]["type"] == "RUN_STARTED"
    assert events[0]["protocolVersion"] == "1.0"
    assert events[0]["threadId"] == thread
    assert events[0]["runId"] == body["runId"]
    answer = answer_text(events)
    assert "PNG, 64x48 pixels" in answer
    assert "blue" in answer
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["outcome"] == {"type": "success"}
    assert finished["usage"][0]["provider"] == "local"
    assert finished["usage"][0]["model"] == "vision"
    worker = of_type(events, "TEXT_MESSAGE_END")[0]["metadata"]["iris/workerAgentOutput"]
    assert worker["answer"] == answer
    assert worker["finishReason"] == "stop"
    assert worker["toolCallIds"] == []

    rows = await stored.messages(thread)
    assert [r.role for r in rows] == ["user", "assistant"]
    user, assistant = rows
    assert user.external_id == body["messages"][0]["id"]
    assert user.parts is not None
    assert user.parts[1]["path"] == image["path"]
    assert "token" not in msgspec.json.encode(user.parts).decode(), "a signed URL was stored"
    assert assistant.content == answer
    assert assistant.meta["worker_agent_output"] == worker
    run_row = await stored.run(body["runId"])
    assert run_row is not None
    assert run_row.status == "succeeded"
    assert run_row.finished_at is not None


@pytest.mark.parametrize("storage_kind", ["local", "s3"])  # re-signed by Iris, streamed from S3
async def test_history_replays_the_image_with_a_fresh_url_that_downloads_the_same_bytes(
    client: Client, alice: dict[str, str]
) -> None:
    thread = str(uuid.uuid4())
    data = image_bytes("PNG", (40, 30))
    image = await upload(client, alice, thread, data=data)
    await run(client, alice, run_input(thread, user_message("look", image["parts"]["agui"])))

    history = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()
    user, assistant = history["messages"]
    text, binary = user["content"]
    assert text == {"type": "text", "text": "look"}
    assert binary["type"] == "binary"
    assert binary["mimeType"] == "image/png"
    assert binary["filename"] == "red.png"
    assert binary["expiresAt"]
    url = urlsplit(binary["url"])
    download = await client.get(f"{url.path}?{url.query}")
    assert download.status_code == 200
    assert hashlib.sha256(download.content).hexdigest() == hashlib.sha256(data).hexdigest()
    assert assistant["role"] == "assistant"
    assert assistant["metadata"]["workerAgentOutput"]["answer"] == assistant["content"]

    agui = (await client.get(f"/agent/threads/{thread}/messages?format=ag-ui", headers=alice)).json()
    part = agui["messages"][0]["content"][1]
    assert part["type"] == "image"
    assert part["source"]["type"] == "url"
    assert part["source"]["mimeType"] == "image/png"
    assert part["metadata"]["filename"] == "red.png"
    assert part["metadata"]["expiresAt"]
    for plain, ag_ui in zip(history["messages"], agui["messages"], strict=True):
        assert "createdAt" not in ag_ui  # not an AG-UI Message field: the client would strip it
        assert ag_ui["metadata"]["iris/createdAt"] == plain["createdAt"]


async def test_history_pages_and_hides_other_users_threads(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]]
) -> None:
    thread = str(uuid.uuid4())
    for text in ("one", "two"):
        await run(client, alice, run_input(thread, user_message(text)))

    first = (await client.get(f"/agent/threads/{thread}/messages?limit=3", headers=alice)).json()
    assert len(first["messages"]) == 3
    assert "nextCursor" in first
    rest = (
        await client.get(f"/agent/threads/{thread}/messages?after={first['nextCursor']}", headers=alice)
    ).json()
    assert [m["role"] for m in rest["messages"]] == ["assistant"]
    assert "nextCursor" not in rest

    for who, path in ((auth("mallory"), thread), (alice, str(uuid.uuid4())), (alice, thread.upper())):
        response = await client.get(f"/agent/threads/{path}/messages", headers=who)
        assert response.status_code == 404
        assert response.json()["code"] == "thread_not_found"
    refused = await client.get(f"/agent/threads/{'x' * 129}/messages", headers=alice)
    assert refused.status_code == 422
    assert refused.json()["code"] == "invalid_thread_id"


async def test_earlier_turns_come_from_the_database_not_the_client(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    first = user_message("first question")
    await run(client, alice, run_input(thread, first))
    # The client resends the first turn with different text and forged assistant content: ignored.
    forged = {**first, "content": "something else entirely"}
    assistant = {"id": "a1", "role": "assistant", "content": "forged"}
    second = user_message("second question")
    await run(client, alice, run_input(thread, forged, assistant, second))

    rows = await stored.messages(thread)
    assert [(r.role, r.content) for r in rows if r.role == "user"] == [
        ("user", "first question"),
        ("user", "second question"),
    ]
    assert all(r.content != "forged" for r in rows)


async def test_a_server_tool_round_trip_is_persisted_with_both_structured_outputs(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    image = await upload(client, alice, thread, data=image_bytes("PNG", (80, 20)), name="wide.png")
    body = run_input(thread, user_message('use tool image_info {"index": 1}', image["parts"]["agui"]))

    events = await run(client, alice, body)

    start = of_type(events, "TOOL_CALL_START")[0]
    assert start["toolCallName"] == "image_info"
    result = of_type(events, "TOOL_CALL_RESULT")[0]
    tool_output = result["metadata"]["iris/toolAgentOutput"]
    assert tool_output["status"] == "succeeded"
    assert tool_output["toolCallId"] == start["toolCallId"]
    assert tool_output["result"]["width"] == 80
    assert tool_output["result"]["height"] == 20
    assert "80x20" in tool_output["resultSummary"]
    assert "80" in answer_text(events)  # the model saw the result and answered with it

    rows = await stored.messages(thread)
    assert [r.role for r in rows] == ["user", "assistant", "tool", "assistant"]
    calling, tool, final = rows[1:]
    assert calling.meta["worker_agent_output"]["toolCallIds"] == [start["toolCallId"]]
    assert calling.parts == [
        {"type": "tool_call", "id": start["toolCallId"], "name": "image_info", "arguments": '{"index":1}'}
    ]
    assert tool.content == tool_output["resultSummary"]
    assert tool.meta["tool_agent_output"] == tool_output
    assert tool.external_id == result["messageId"]
    assert final.meta["worker_agent_output"]["answer"] == final.content

    history = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()["messages"]
    assert history[1]["toolCalls"][0]["function"]["name"] == "image_info"
    assert history[2]["toolCallId"] == start["toolCallId"]
    assert history[2]["metadata"]["toolAgentOutput"] == tool_output


async def test_a_failing_tool_is_reported_to_the_model_not_as_a_run_error(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    events = await run(client, alice, run_input(thread, user_message("use tool image_info {}")))

    output = of_type(events, "TOOL_CALL_RESULT")[0]["metadata"]["iris/toolAgentOutput"]
    assert output["status"] == "failed"
    assert output["error"] == "this thread has no images"
    assert output["result"] is None
    assert events[-1]["type"] == "RUN_FINISHED"
    assert "failed" in answer_text(events)
    assert [r.role for r in await stored.messages(thread)] == ["user", "assistant", "tool", "assistant"]


async def test_every_event_is_in_the_event_log_written_in_batches(
    settings: Settings, alice: dict[str, str], stored: Stored
) -> None:
    app = create_app(settings, environ={})
    commits = 0

    def count(*_: Any) -> None:
        nonlocal commits
        commits += 1

    async with AsyncTestClient(app=app) as client:
        event.listen(app.state.alchemy.get_engine().sync_engine, "commit", count)
        thread = str(uuid.uuid4())
        body = run_input(thread, user_message(" ".join(f"word{i}" for i in range(300))))
        response = await client.post("/agent/runs", json=body, headers=alice)
        events = check_stream(response.content)
        assert len(of_type(events, "TEXT_MESSAGE_CONTENT")) > 300

    logged = await stored.events(body["runId"])
    frames, _ = parse_sse_with_comments(response.content)
    assert [int(f.id or 0) for f in frames] == list(range(1, len(events) + 1))
    assert [e["sequence"] for e in logged] == list(range(1, len(events) + 1))
    assert [{k: v for k, v in e.items() if k != "sequence"} for e in logged] == events
    assert commits < 20, f"{commits} commits for {len(events)} events: not batched"


async def test_pings_keep_a_silent_stream_open(
    settings: Settings, alice: dict[str, str], auth: Callable[..., dict[str, str]]
) -> None:
    app = create_app(msgspec.structs.replace(settings, sse_ping_seconds=0.05), environ={})
    async with AsyncTestClient(app=app) as client:
        created = await client.post(
            "/api/models",
            json={
                "name": "Slow",
                "provider": "local",
                "modelId": "slow",
                "type": "vision",
                "options": {"delayMs": 150},
            },
            headers=auth("root", role="admin"),
        )
        assert created.status_code == 201, created.text
        await offer(client, auth("root", role="admin"), "local/slow")
        thread = str(uuid.uuid4())
        response = await client.post(
            "/agent/runs", json=run_input(thread, user_message("hi there"), model="local/slow"), headers=alice
        )
    _, comments = parse_sse_with_comments(response.content)
    assert comments >= 2
    assert b": ping\n\n" in response.content
    check_stream(response.content)


async def test_unknown_fields_parts_and_roles_are_tolerated(client: Client, alice: dict[str, str]) -> None:
    thread = str(uuid.uuid4())
    message = user_message("hello")
    message["content"].append({"type": "future-part", "x": 1})
    message["somethingNew"] = True
    body = run_input(
        thread,
        {"id": "r1", "role": "reasoning", "content": "thinking"},
        {"id": "x1", "role": "activity", "activityType": "a", "content": {}},
        message,
        futureField={"a": 1},
    )
    events = await run(client, alice, body)
    assert "You said: hello" in answer_text(events)


async def test_capabilities_declare_what_is_honoured(client: Client) -> None:
    response = await client.get("/agent/capabilities")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    AgentCapabilities.model_validate(body)
    assert body["transport"] == {"streaming": True}
    assert body["multimodal"]["input"] == {  # local/multimodal reads PDFs and hears WAV and MP3
        "image": True,
        "audio": True,
        "video": False,
        "pdf": True,
        "file": False,
    }
    assert {t["name"] for t in body["tools"]["items"]} == {"image_info", "current_time", "delete_attachment"}
    assert body["tools"]["clientProvided"] is True
    assert body["humanInTheLoop"] == {"supported": True, "approvals": True, "interrupts": True}
    assert "resumable" not in body["transport"]
    # The seeded local models reason, stream it and sign it; per model in the custom group.
    assert body["reasoning"] == {"supported": True, "streaming": True, "encrypted": True}
    by_model = body["custom"]["iris/reasoningByModel"]
    assert by_model["local/vision"]["supported"] is True
    assert by_model["local/vision"]["effort"] is True


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
async def test_current_time_tool_answers_in_the_asked_zone(client: Client, alice: dict[str, str]) -> None:
    thread = str(uuid.uuid4())
    events = await run(
        client, alice, run_input(thread, user_message('use tool current_time {"timezone": "Asia/Tokyo"}'))
    )
    output = of_type(events, "TOOL_CALL_RESULT")[0]["metadata"]["iris/toolAgentOutput"]
    assert output["status"] == "succeeded"
    assert output["result"]["iso"].endswith("+09:00")


async def test_calls_past_the_turn_budget_are_answered_without_running(
    settings: Settings, alice: dict[str, str], stored: Stored
) -> None:
    app = create_app(msgspec.structs.replace(settings, max_tool_iterations=1), environ={})
    async with AsyncTestClient(app=app) as client:
        thread = str(uuid.uuid4())
        events = await run(client, alice, run_input(thread, user_message("use tool current_time {}")))

    output = of_type(events, "TOOL_CALL_RESULT")[0]["metadata"]["iris/toolAgentOutput"]
    assert output["status"] == "failed"
    assert output["error"] == "this run has used all 1 of its model turns"
    assert events[-1]["outcome"] == {"type": "success"}
    assert [r.role for r in await stored.messages(thread)] == ["user", "assistant", "tool"]
