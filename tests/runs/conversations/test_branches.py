"""Branches: every edit and regeneration adds a sibling, the session has an active line, a switch moves
it, the next message continues from it, and the model only ever sees that line — on the chat surface
and on ``/agent/runs``, whose clients branch by sending the thread as they see it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.run_fixtures import Stored
from tests.support.runs import chat, chat_history, of_type, run, run_input, upload, user_message

Client = AsyncTestClient[Litestar]
SESSIONS = "/api/agents/default/sessions"
OPENAI_KEY = "sk-test-branches"


async def switch(client: Client, headers: dict[str, str], session: str, message_id: str) -> httpx.Response:
    return await client.post(f"{SESSIONS}/{session}/active", json={"messageId": message_id}, headers=headers)


async def edit(client: Client, headers: dict[str, str], session: str, message_id: str, text: str) -> None:
    await chat(client, headers, {"sessionId": session, "editMessageId": message_id, "content": text})


async def test_two_edits_and_a_regeneration_are_siblings_on_one_active_line(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    session = (await chat(client, alice, {"content": "first"}))[0]["threadId"]
    await chat(client, alice, {"sessionId": session, "content": "second"})
    u1, a1, u2, a2 = await chat_history(client, alice, session)
    await edit(client, alice, session, u2["id"], "second, again")
    u2b = (await chat_history(client, alice, session))[2]
    await edit(client, alice, session, u2b["id"], "second, third try")
    await chat(client, alice, {"sessionId": session, "regenerate": True})

    line = await chat_history(client, alice, session)
    assert [m["content"].split("\n")[-1] for m in line] == [
        "first",
        "You said: first",
        "second, third try",
        "You said: second, third try",
    ]
    assert [m["id"] for m in line[:2]] == [u1["id"], a1["id"]]
    assert (line[0]["siblings"], line[0]["siblingIndex"]) == ([u1["id"]], 0)
    assert line[2]["siblings"][:2] == [u2["id"], u2b["id"]]
    assert (len(line[2]["siblings"]), line[2]["siblingIndex"]) == (3, 2)
    regenerated_from = line[3]["siblings"][0]
    assert (len(line[3]["siblings"]), line[3]["siblingIndex"]) == (2, 1)
    assert regenerated_from != line[3]["id"]

    everything = await chat_history(client, alice, session, "?includeSuperseded=true")
    assert len(everything) == 9  # nothing is ever deleted: 2 + 2 + 2 + 2 + 1
    assert {m["id"] for m in everything if "supersededAt" not in m} == {m["id"] for m in line}
    rows = {row.external_id: row for row in await stored.messages(session)}
    assert rows[u2b["id"]].parent_id == rows[u2["id"]].parent_id == rows[a1["id"]].id
    assert rows[a2["id"]].parent_id == rows[u2["id"]].id
    assert [r.external_id for r in await stored.active_line(session)] == [m["id"] for m in line]


async def test_switching_back_and_continuing_from_an_older_version(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    session = (await chat(client, alice, {"content": "tell me about otters"}))[0]["threadId"]
    await chat(client, alice, {"sessionId": session, "content": "and rivers"})
    _, _, u2, a2 = await chat_history(client, alice, session)
    await edit(client, alice, session, u2["id"], "and seas")
    edited = await chat_history(client, alice, session)
    assert edited[2]["content"] == "and seas"

    switched = await switch(client, alice, session, u2["id"])
    assert switched.status_code == 200, switched.text
    assert switched.json() == {"sessionId": session, "messageId": u2["id"], "leafId": a2["id"]}
    back = await chat_history(client, alice, session)
    assert [m["id"] for m in back[2:]] == [u2["id"], a2["id"]]
    assert (back[2]["siblingIndex"], back[2]["siblings"][1]) == (0, edited[2]["id"])

    await chat(client, alice, {"sessionId": session, "content": "and lakes"})
    continued = await chat_history(client, alice, session)
    assert [m["content"] for m in continued[2:5]] == ["and rivers", a2["content"], "and lakes"]
    rows = {row.external_id: row for row in await stored.messages(session)}
    assert rows[continued[4]["id"]].parent_id == rows[a2["id"]].id
    await stored.active_line(session)

    # The edited line is intact: switching to it shows its newest end again.
    again = await switch(client, alice, session, edited[2]["id"])
    assert again.json()["leafId"] == edited[3]["id"]
    assert [m["id"] for m in await chat_history(client, alice, session)] == [m["id"] for m in edited]
    # Switching to the line already shown changes nothing.
    assert (await switch(client, alice, session, edited[3]["id"])).json()["leafId"] == edited[3]["id"]

    missing = await switch(client, alice, session, "no-such-message")
    assert (missing.status_code, missing.json()["code"]) == (404, "message_not_found")
    theirs = await switch(client, auth("bob"), session, u2["id"])
    assert (theirs.status_code, theirs.json()["code"]) == (404, "thread_not_found")


async def test_switching_waits_for_an_open_approval(client: Client, alice: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    image = await upload(client, alice, session)
    await chat(client, alice, {"sessionId": session, "content": "first"})
    first_answer = (await chat_history(client, alice, session))[1]
    events = await chat(
        client,
        alice,
        {"sessionId": session, "content": f'use tool delete_attachment {{"uploadId": "{image["id"]}"}}'},
    )
    assert of_type(events, "RUN_FINISHED")[0]["outcome"]["type"] == "interrupt"
    refused = await switch(client, alice, session, first_answer["id"])
    assert (refused.status_code, refused.json()["code"]) == (422, "interrupt_pending")


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_switching_is_refused_while_a_run_goes(base_url: str, auth: Callable[..., dict[str, str]]) -> None:
    """A run's answer belongs to the line it started on (a real server: the run streams slowly)."""
    alice = auth("alice")
    first = httpx.post(
        f"{base_url}/api/agents/default/chat", json={"content": "hi"}, headers=alice, timeout=60
    )
    session = first.text.split('"threadId":"', 1)[1].split('"', 1)[0]
    answer = httpx.get(f"{base_url}{SESSIONS}/{session}/messages", headers=alice).json()["messages"][1]
    with httpx.stream(
        "POST",
        f"{base_url}/api/agents/default/chat",
        json={"sessionId": session, "content": " ".join(["word"] * 60), "modelId": "local/slow"},
        headers=alice,
        timeout=60,
    ) as streaming:
        lines = streaming.iter_lines()
        assert any("TEXT_MESSAGE_CONTENT" in line for line in lines)  # the run is going
        refused = httpx.post(
            f"{base_url}{SESSIONS}/{session}/active", json={"messageId": answer["id"]}, headers=alice
        )
        assert (refused.status_code, refused.json()["code"]) == (409, "run_in_progress")
        assert any("RUN_FINISHED" in line for line in lines)
    done = httpx.post(
        f"{base_url}{SESSIONS}/{session}/active", json={"messageId": answer["id"]}, headers=alice
    )
    assert done.status_code == 200, done.text


# -- the model's view -------------------------------------------------------------------------------


@pytest.fixture
def openai() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key=OPENAI_KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.fixture
async def vendor_client(
    settings: Settings, openai: tuple[FakeOpenAI, str], auth: Callable[..., dict[str, str]]
) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={"OPENAI_API_KEY": OPENAI_KEY})) as client:
        created = await client.post(
            "/api/models",
            json={
                "name": "GPT",
                "provider": "openai",
                "modelId": "gpt-4o",
                "type": "vision",
                "options": {"baseUrl": openai[1] + "/v1"},
            },
            headers=auth("root", role="admin"),
        )
        assert created.status_code == 201, created.text
        await offer(client, auth("root", role="admin"), "openai/gpt-4o")
        yield client


def sent_texts(fake: FakeOpenAI) -> list[tuple[str, str]]:
    """(role, text) of every message the vendor got in its last request, the system prompt left out."""
    out = []
    for message in fake.requests[-1].json["messages"]:
        content = message.get("content")
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content or ())
        if message["role"] != "system":
            out.append((message["role"], text))
    return out


async def test_the_model_sees_only_the_active_line(
    vendor_client: Client, openai: tuple[FakeOpenAI, str], alice: dict[str, str]
) -> None:
    client, (fake, _) = vendor_client, openai
    body = {"modelId": "openai/gpt-4o"}
    fake.text("Otters hold hands.")
    session = (await chat(client, alice, {**body, "content": "otters?"}))[0]["threadId"]
    fake.text("Rivers run.")
    await chat(client, alice, {**body, "sessionId": session, "content": "rivers?"})
    _, _, rivers, _ = await chat_history(client, alice, session)
    fake.text("Seas are salty.")
    await edit(client, alice, session, rivers["id"], "seas?")
    assert sent_texts(fake) == [("user", "otters?"), ("assistant", "Otters hold hands."), ("user", "seas?")]

    fake.text("Other rivers run too.")
    await chat(client, alice, {**body, "sessionId": session, "regenerate": True})
    assert sent_texts(fake)[-1] == ("user", "seas?")

    assert (await switch(client, alice, session, rivers["id"])).status_code == 200
    fake.text("Lakes are still.")
    await chat(client, alice, {**body, "sessionId": session, "content": "lakes?"})
    assert sent_texts(fake) == [
        ("user", "otters?"),
        ("assistant", "Otters hold hands."),
        ("user", "rivers?"),
        ("assistant", "Rivers run."),
        ("user", "lakes?"),
    ]


# -- AG-UI clients ----------------------------------------------------------------------------------


def answer_id(events: list[dict[str, Any]]) -> str:
    ends = of_type(events, "TEXT_MESSAGE_START")
    return str(ends[-1]["messageId"])


def assistant(message_id: str, text: str = "") -> dict[str, Any]:
    return {"id": message_id, "role": "assistant", "content": text}


async def thread_history(client: Client, headers: dict[str, str], thread: str) -> list[dict[str, Any]]:
    response = await client.get(f"/agent/threads/{thread}/messages?format=ag-ui", headers=headers)
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()["messages"]
    return messages


async def test_agui_messages_that_diverge_start_a_branch(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    """The client sends the thread as it sees it: an edit is a new message after the edited one's
    predecessor, a regeneration is the thread cut after the message to answer again."""
    thread = str(uuid.uuid4())
    u1 = user_message("first", message_id="u1")
    a1 = assistant(answer_id(await run(client, alice, run_input(thread, u1))))
    u2 = user_message("second", message_id="u2")
    a2 = assistant(answer_id(await run(client, alice, run_input(thread, u1, a1, u2))))

    edited = user_message("second, edited", message_id="u2b")
    a2b = assistant(answer_id(await run(client, alice, run_input(thread, u1, a1, edited))))
    line = await thread_history(client, alice, thread)
    assert [m["id"] for m in line] == ["u1", a1["id"], "u2b", a2b["id"]]
    assert line[2]["metadata"]["iris/siblings"] == ["u2", "u2b"]
    assert line[2]["metadata"]["iris/siblingIndex"] == 1

    again = await run(client, alice, run_input(thread, u1, a1, edited))  # no new message: answer again
    regenerated = await thread_history(client, alice, thread)
    assert regenerated[3]["id"] == answer_id(again) != a2b["id"]
    assert regenerated[3]["metadata"]["iris/siblings"] == [a2b["id"], answer_id(again)]

    # An older line named in full is continued where it ends.
    u3 = user_message("third, on the first line", message_id="u3")
    await run(client, alice, run_input(thread, u1, a1, u2, a2, u3))
    assert [m["id"] for m in (await thread_history(client, alice, thread))[:5]] == [
        "u1",
        a1["id"],
        "u2",
        a2["id"],
        "u3",
    ]
    # A client that sends only its new message continues the active line, as before; so does one that
    # keeps its own messages but not the answers.
    await run(client, alice, run_input(thread, user_message("fourth", message_id="u4")))
    assert [m["id"] for m in await thread_history(client, alice, thread)][4:7:2] == ["u3", "u4"]
    u5 = user_message("fifth", message_id="u5")
    await run(client, alice, run_input(thread, u1, u2, u3, user_message("fourth", message_id="u4"), u5))
    assert [m["id"] for m in await thread_history(client, alice, thread)][4:9:2] == ["u3", "u4", "u5"]
    await stored.active_line(thread)

    for body, field in (
        (run_input(thread, u1, a1, edited, u2, user_message("x", message_id="n1")), "messages[2]"),
        (run_input(thread, user_message("x", message_id="n2"), u1), "messages[1]"),
    ):
        refused = await client.post("/agent/runs", json=body, headers=alice)
        assert refused.status_code == 422, refused.text
        assert (refused.json()["code"], refused.json()["field"]) == ("messages_diverge", field)
    await stored.active_line(thread)
