"""Seed 002's chat surface on the run engine: parts and legacy content, sessions, edit, regenerate,
re-attach, and the seed's §9 edge cases that a backend owns."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.agui import check_stream
from tests.support.images import image_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import CHAT, answer_text, chat, upload
from tests.support.runs import chat_history as history

Client = AsyncTestClient[Litestar]


def chat_image(uploaded: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = uploaded["parts"]["chat"]
    return part


async def test_an_image_only_message_is_answered_and_the_session_id_comes_first(
    client: Client, alice: dict[str, str]
) -> None:
    session = str(uuid.uuid4())
    image = await upload(client, alice, session, data=image_bytes("PNG", (30, 20), (30, 160, 60)))
    events = await chat(client, alice, {"sessionId": session, "parts": [chat_image(image)]})

    assert events[0]["type"] == "RUN_STARTED"
    assert events[0]["threadId"] == session
    assert "30x20" in answer_text(events)
    assert "green" in answer_text(events)
    user, assistant = await history(client, alice, session)
    assert user["content"] == ""
    assert user["parts"][0]["type"] == "image"
    assert user["parts"][0]["image"].startswith("http://127.0.0.1:8000/storage/v1/object/sign/iris/")
    assert user["parts"][0]["expiresAt"]
    assert assistant["parts"] == [{"type": "text", "text": assistant["content"]}]


async def test_a_new_session_gets_its_id_in_run_started_and_a_title(
    client: Client, alice: dict[str, str]
) -> None:
    events = await chat(client, alice, {"content": "What can you do with pictures of cats?"})
    session = events[0]["threadId"]
    listed = (await client.get("/api/agents/default/sessions", headers=alice)).json()["sessions"]
    assert listed[0]["id"] == session
    assert listed[0]["title"] == "What can you do with pictures of cats?"
    user, _ = await history(client, alice, session)
    assert user["parts"] == [{"type": "text", "text": "What can you do with pictures of cats?"}]


async def test_legacy_content_and_text_parts(client: Client, alice: dict[str, str], stored: Stored) -> None:
    events = await chat(client, alice, {"content": "hello there"})
    session = events[0]["threadId"]
    await chat(client, alice, {"sessionId": session, "parts": [{"type": "text", "text": "second"}]})
    rows = await stored.messages(session)
    assert [(r.role, r.content) for r in rows if r.role == "user"] == [
        ("user", "hello there"),
        ("user", "second"),
    ]
    assert rows[0].parts == [{"type": "text", "text": "hello there"}]


async def test_refusals_name_the_chat_fields(client: Client, alice: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    image = await upload(client, alice, session)
    cases: list[tuple[dict[str, Any], int, str, str | None]] = [
        ({"sessionId": session}, 422, "empty_message", "parts"),
        ({"sessionId": session, "parts": []}, 422, "empty_message", "parts"),
        ({"sessionId": session, "parts": [chat_image(image)] * 5}, 422, "too_many_images", "parts"),
        ({"sessionId": session, "parts": [{"type": "video"}]}, 422, "part_type_unsupported", "parts[0].type"),
        (
            {
                "sessionId": session,
                "parts": [{**chat_image(image), "image": "https://evil.example.com/a.png"}],
            },
            422,
            "attachment_url_rejected",
            "parts[0].source.value",
        ),
        (
            {"sessionId": session, "parts": [chat_image(image)], "modelId": "local/text"},
            422,
            "model_lacks_vision",
            None,
        ),
        ({"content": "hi", "unknownField": 1}, 422, "validation_failed", "unknownField"),
    ]
    for body, status, code, field in cases:
        response = await client.post(CHAT, json=body, headers=alice)
        assert response.status_code == status, (body, response.text)
        assert response.json()["code"] == code, (body, response.json())
        if field is not None:
            assert response.json().get("field") == field, (body, response.json())
    gif = await client.post(
        "/api/files",
        files={"file": ("a.gif", image_bytes("GIF"), "image/gif")},
        data={"threadId": session},
        headers=alice,
    )
    assert gif.status_code == 415
    unknown = await client.post("/api/agents/nobody/chat", json={"content": "hi"}, headers=alice)
    assert unknown.status_code == 404


async def test_switching_a_session_with_images_to_a_text_model(client: Client, alice: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    image = await upload(client, alice, session)
    await chat(
        client, alice, {"sessionId": session, "parts": [{"type": "text", "text": "see"}, chat_image(image)]}
    )
    refused = await client.post(
        CHAT,
        json={"sessionId": session, "parts": [chat_image(image)], "modelId": "local/text"},
        headers=alice,
    )
    assert refused.status_code == 422
    assert refused.json()["code"] == "model_lacks_vision"
    text_only = await chat(
        client, alice, {"sessionId": session, "content": "and in words?", "modelId": "local/text"}
    )
    assert "You said: and in words?" in answer_text(text_only)
    assert len(await history(client, alice, session)) == 4


async def test_editing_an_old_text_message_to_add_an_image(client: Client, alice: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    await chat(client, alice, {"sessionId": session, "content": "first"})
    await chat(client, alice, {"sessionId": session, "content": "second"})
    first = (await history(client, alice, session))[0]
    image = await upload(client, alice, session, data=image_bytes("PNG", (12, 34)))

    edited = await chat(
        client,
        alice,
        {
            "sessionId": session,
            "editMessageId": first["id"],
            "parts": [{"type": "text", "text": "first, with a picture"}, chat_image(image)],
        },
    )

    assert "12x34" in answer_text(edited)
    live = await history(client, alice, session)
    assert next((m["role"], m["content"]) for m in live) == ("user", "first, with a picture")
    assert len(live) == 2
    assert live[0]["parts"][1]["type"] == "image"
    everything = await history(client, alice, session, "?includeSuperseded=true")
    assert len(everything) == 6
    assert sum("supersededAt" in m for m in everything) == 4
    missing = await client.post(
        CHAT, json={"sessionId": session, "editMessageId": "nope", "content": "x"}, headers=alice
    )
    assert missing.status_code == 404
    rejected = await client.post(
        CHAT,
        json={
            "sessionId": session,
            "editMessageId": live[0]["id"],
            "parts": [chat_image(image)],
            "modelId": "local/text",
        },
        headers=alice,
    )
    assert rejected.status_code == 422
    after = await history(client, alice, session)
    assert [(m["id"], m["content"]) for m in after] == [(m["id"], m["content"]) for m in live]  # untouched


async def test_regenerate_answers_again_with_the_original_images(
    client: Client, alice: dict[str, str]
) -> None:
    session = str(uuid.uuid4())
    image = await upload(client, alice, session, data=image_bytes("PNG", (44, 22)))
    first = await chat(
        client, alice, {"sessionId": session, "parts": [{"type": "text", "text": "what?"}, chat_image(image)]}
    )
    again = await chat(client, alice, {"sessionId": session, "regenerate": True})

    assert "44x22" in answer_text(again)
    assert answer_text(again) == answer_text(first)
    live = await history(client, alice, session)
    assert [m["role"] for m in live] == ["user", "assistant"]
    everything = await history(client, alice, session, "?includeSuperseded=true")
    assert [("supersededAt" in m) for m in everything] == [False, True, False]
    assert everything[0]["parts"][1]["type"] == "image"  # the same user message, images included
    assert live[1]["id"] == everything[2]["id"] != everything[1]["id"]  # a new answer; the old one kept


async def test_legacy_rows_without_parts_come_back_as_text(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    events = await chat(client, alice, {"content": "modern"})
    session = events[0]["threadId"]
    await stored.add_legacy_message(session, "an old message from before parts")
    messages = await history(client, alice, session)
    assert messages[-1]["parts"] == [{"type": "text", "text": "an old message from before parts"}]


async def test_sessions_are_listed_newest_first_and_deleted_softly(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    older = (await chat(client, alice, {"content": "older"}))[0]["threadId"]
    newer = (await chat(client, alice, {"content": "newer"}))[0]["threadId"]
    listed = (await client.get("/api/agents/default/sessions", headers=alice)).json()["sessions"]
    assert [s["id"] for s in listed] == [newer, older]
    assert (await client.get("/api/agents/default/sessions", headers=auth("bob"))).json()["sessions"] == []
    assert (
        await client.get(f"/api/agents/default/sessions/{older}/messages", headers=auth("bob"))
    ).status_code == 404

    assert (await client.delete(f"/api/agents/default/sessions/{older}", headers=alice)).status_code == 204
    listed = (await client.get("/api/agents/default/sessions", headers=alice)).json()["sessions"]
    assert [s["id"] for s in listed] == [newer]
    assert (
        await client.get(f"/api/agents/default/sessions/{older}/messages", headers=alice)
    ).status_code == 404
    assert len(await stored.messages(older)) == 2  # nothing hard-deleted


async def test_guests_may_chat_only_with_guest_agents(
    client: Client, stored: Stored, alice: dict[str, str]
) -> None:
    token = (await client.post("/api/auth/guest")).json()["accessToken"]
    guest = {"Authorization": f"Bearer {token}"}
    events = await chat(client, guest, {"content": "hi as a guest"})
    assert events[-1]["type"] == "RUN_FINISHED"

    await stored.add_agent("members", guest_access=False)
    refused = await client.post("/api/agents/members/chat", json={"content": "hi"}, headers=guest)
    assert refused.status_code == 403
    assert refused.json()["code"] == "agent_not_for_guests"
    member = await client.post("/api/agents/members/chat", json={"content": "hi"}, headers=alice)
    assert member.status_code == 200
    session = check_stream(member.content)[0]["threadId"]
    other_agent = await client.post(CHAT, json={"sessionId": session, "content": "hi"}, headers=alice)
    assert other_agent.status_code == 404  # the session belongs to the other agent


async def test_tools_can_be_turned_off_for_a_message(client: Client, alice: dict[str, str]) -> None:
    ask = "use tool current_time {}"
    with_tools = await chat(client, alice, {"content": ask})
    assert any(e["type"] == "TOOL_CALL_START" for e in with_tools)
    without = await chat(client, alice, {"content": ask, "enableTools": False})
    assert not any(e["type"] == "TOOL_CALL_START" for e in without)
    assert "I have no tool called current_time" in answer_text(without)


async def test_re_attach_to_a_session_mid_stream(base_url: str, alice: dict[str, str]) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        idle = await http.get(f"/api/agents/default/chat/stream?sessionId={uuid.uuid4()}", headers=alice)
        assert idle.status_code == 404
        body = {"content": " ".join(f"w{i}" for i in range(30)), "modelId": "local/slow"}
        async with http.stream("POST", CHAT, json=body, headers=alice) as response:
            first = b""
            async for chunk in response.aiter_bytes():
                first += chunk
                if b"TEXT_MESSAGE_CONTENT" in first:
                    break
            session = check_stream_prefix(first)
            again = await http.get(f"/api/agents/default/chat/stream?sessionId={session}", headers=alice)
        done = await http.get(f"/api/agents/default/chat/stream?sessionId={session}", headers=alice)
    events = check_stream(again.content)
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_FINISHED"
    assert answer_text(events).endswith("w29")
    assert done.status_code == 204


def check_stream_prefix(body: bytes) -> str:
    """The session id from the RUN_STARTED at the head of a stream."""
    line = next(line for line in body.decode().splitlines() if line.startswith("data: "))
    started: dict[str, Any] = httpx.Response(200, content=line[6:]).json()
    assert started["type"] == "RUN_STARTED"
    return str(started["threadId"])


async def test_the_stream_names_the_new_user_message_so_it_can_be_edited(
    client: Client, alice: dict[str, str]
) -> None:
    """``RUN_STARTED.metadata["iris/userMessageId"]`` is the id history gives the message the run
    answers: a client edits or regenerates without re-reading history."""
    first = await chat(client, alice, {"content": "one"})
    session = first[0]["threadId"]
    first_id = first[0]["metadata"]["iris/userMessageId"]
    second = await chat(client, alice, {"sessionId": session, "content": "two"})
    second_id = second[0]["metadata"]["iris/userMessageId"]
    assert [m["id"] for m in await history(client, alice, session) if m["role"] == "user"] == [
        first_id,
        second_id,
    ]

    edited = await chat(client, alice, {"sessionId": session, "editMessageId": second_id, "content": "2"})
    edited_id = edited[0]["metadata"]["iris/userMessageId"]
    assert edited_id != second_id
    regenerated = await chat(client, alice, {"sessionId": session, "regenerate": True})
    assert regenerated[0]["metadata"]["iris/userMessageId"] == edited_id
    live = await history(client, alice, session)
    assert [(m["id"], m["content"]) for m in live if m["role"] == "user"] == [
        (first_id, "one"),
        (edited_id, "2"),
    ]
