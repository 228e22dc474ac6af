"""Runs of an agent: chosen by ``forwardedProps.agent`` for a new thread (the chat surface by its path),
pinned to the agent version they ran with, and made with that version's instructions, models, tools,
turn budget and reasoning default."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import select

from iris.app.asgi import create_app
from iris.app.persistence.models import AgentVersion, Run
from iris.app.settings import Settings
from tests.support.agui import check_stream
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, run, run_input, user_message

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]
KEY = "sk-test-123"
WRITER = {
    "slug": "writer",
    "name": "Writer",
    "instructions": "You are version one.",
    "models": ["openai/gpt-4o", "local/vision"],
}


@pytest.fixture
def vendor() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key=KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.fixture
def openai(vendor: tuple[FakeOpenAI, str]) -> FakeOpenAI:
    return vendor[0]


@pytest.fixture
async def client(settings: Settings, vendor: tuple[FakeOpenAI, str], auth: Auth) -> AsyncIterator[Client]:
    """Iris with a fake OpenAI model and the agent ``writer``, which defaults to it."""
    async with AsyncTestClient(app=create_app(settings, environ={"OPENAI_API_KEY": KEY})) as test_client:
        admin = auth("root", "admin")
        model = {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "vision"}
        options = {"baseUrl": f"{vendor[1]}/v1"}
        created = await test_client.post("/api/models", json={**model, "options": options}, headers=admin)
        assert created.status_code == 201, created.text
        agent = await test_client.post("/api/agents", json=WRITER, headers=admin)
        assert agent.status_code == 201, agent.text
        yield test_client


def on_agent(thread: str, text: str, agent: str | None = None, **props: Any) -> dict[str, Any]:
    """A run input for ``agent`` (none: the thread's own)."""
    forwarded = {**({"agent": agent} if agent else {}), **props}
    return run_input(thread, user_message(text), forwardedProps=forwarded)


async def _agent_of_run(database_url: str, run_id: str) -> tuple[str, int]:
    """The agent version a stored run points at: (slug in its snapshot, version number)."""
    stored = Stored(database_url)
    async with stored._session() as db:
        row = (
            await db.execute(
                select(AgentVersion.snapshot, AgentVersion.version)
                .join(Run, Run.agent_version_id == AgentVersion.id)
                .where(Run.external_id == run_id)
            )
        ).one()
    return row[0]["slug"], row[1]


async def test_a_run_is_pinned_to_the_agent_version_it_ran_with(
    client: Client, openai: FakeOpenAI, alice: dict[str, str], auth: Auth, database_url: str
) -> None:
    thread = str(uuid.uuid4())
    openai.text("First answer.")
    first = await run(client, alice, on_agent(thread, "hello", "writer"))
    assert first[0]["metadata"]["iris/agent"] == {"slug": "writer", "version": 1}
    assert openai.requests[0].json["messages"][0] == {"role": "system", "content": "You are version one."}

    patched = await client.patch(
        "/api/agents/writer", json={"instructions": "You are version two."}, headers=auth("root", "admin")
    )
    assert patched.json()["version"] == 2
    openai.text("Second answer.")
    second = await run(client, alice, on_agent(thread, "and again"))  # the thread keeps its agent

    assert second[0]["metadata"]["iris/agent"] == {"slug": "writer", "version": 2}
    sent = openai.requests[1].json
    assert sent["model"] == "gpt-4o"  # the agent's default model
    assert sent["messages"][0] == {"role": "system", "content": "You are version two."}
    assert "version one" not in json.dumps(sent)
    assert await _agent_of_run(database_url, first[0]["runId"]) == ("writer", 1)
    assert await _agent_of_run(database_url, second[0]["runId"]) == ("writer", 2)

    history = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()["messages"]
    answers = [m for m in history if m["role"] == "assistant"]
    assert [m["metadata"]["workerAgentOutput"]["agent"] for m in answers] == [
        {"slug": "writer", "version": 1},
        {"slug": "writer", "version": 2},
    ]
    chat = (await client.get(f"/api/agents/writer/sessions/{thread}/messages", headers=alice)).json()
    assert [m.get("agent") for m in chat["messages"]] == [
        None,
        {"slug": "writer", "version": 1},
        None,
        {"slug": "writer", "version": 2},
    ]
    replay = await client.get(f"/agent/runs/{first[0]['runId']}/events", headers=alice)
    assert check_stream(replay.content)[0]["metadata"]["iris/agent"] == {"slug": "writer", "version": 1}


async def test_a_model_the_agent_does_not_offer_is_refused_before_anything_is_stored(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    before = await stored.counts()
    refused = await client.post(
        "/agent/runs", json=on_agent(str(uuid.uuid4()), "hi", "writer", modelId="local/text"), headers=alice
    )
    assert (refused.status_code, refused.json()["code"], refused.json()["field"]) == (
        422,
        "model_not_in_agent",
        "forwardedProps.modelId",
    )
    assert "openai/gpt-4o, local/vision" in refused.json()["detail"]
    chat = await client.post(
        "/api/agents/writer/chat", json={"content": "hi", "modelId": "local/text"}, headers=alice
    )
    assert (chat.status_code, chat.json()["code"], chat.json()["field"]) == (
        422,
        "model_not_in_agent",
        "modelId",
    )
    assert await stored.counts() == before

    offered = await run(client, alice, on_agent(str(uuid.uuid4()), "hi", "writer", modelId="local/vision"))
    assert offered[-1]["type"] == "RUN_FINISHED"


async def test_a_thread_keeps_its_agent(client: Client, openai: FakeOpenAI, alice: dict[str, str]) -> None:
    thread = str(uuid.uuid4())
    openai.text("Hi.")
    await run(client, alice, on_agent(thread, "hello", "writer"))

    other = await client.post("/agent/runs", json=on_agent(thread, "again", "default"), headers=alice)
    assert (other.status_code, other.json()["code"]) == (409, "thread_agent_mismatch")
    assert (other.json()["field"], other.json()["extra"]) == ("forwardedProps.agent", {"agent": "writer"})
    chat = await client.post(
        "/api/agents/default/chat", json={"sessionId": thread, "content": "x"}, headers=alice
    )
    assert (chat.status_code, chat.json()["code"]) == (404, "thread_not_found")  # not under this agent's path
    openai.text("Still me.")
    same = await run(client, alice, on_agent(thread, "again", "writer"))  # naming its own agent is fine
    assert answer_text(same) == "Still me."


async def test_a_disabled_agent_takes_no_runs_and_keeps_its_sessions(
    client: Client, openai: FakeOpenAI, alice: dict[str, str], auth: Auth
) -> None:
    admin = auth("root", "admin")
    thread = str(uuid.uuid4())
    openai.text("Kept.")
    await run(client, alice, on_agent(thread, "remember this", "writer"))
    assert (await client.delete("/api/agents/writer", headers=admin)).status_code == 204

    for body in (on_agent(str(uuid.uuid4()), "new", "writer"), on_agent(thread, "more")):
        refused = await client.post("/agent/runs", json=body, headers=alice)
        assert (refused.status_code, refused.json()["code"]) == (404, "agent_not_found")
    sessions = (await client.get("/api/agents/writer/sessions", headers=alice)).json()["sessions"]
    assert [s["id"] for s in sessions] == [thread]
    kept = (await client.get(f"/api/agents/writer/sessions/{thread}/messages", headers=alice)).json()
    assert [m["content"] for m in kept["messages"]] == ["remember this", "Kept."]

    assert (
        await client.patch("/api/agents/writer", json={"enabled": True}, headers=admin)
    ).status_code == 200
    openai.text("Back.")
    assert answer_text(await run(client, alice, on_agent(thread, "more"))) == "Back."


async def test_guests_use_only_agents_open_to_guests(client: Client, auth: Auth) -> None:
    admin = auth("root", "admin")
    private = {"name": "Private", "provider": "local", "modelId": "private", "type": "vision"}
    assert (await client.post("/api/models", json=private, headers=admin)).status_code == 201
    helpdesk = {"slug": "helpdesk", "name": "Helpdesk", "models": ["local/private"], "guestAccess": True}
    assert (await client.post("/api/agents", json=helpdesk, headers=admin)).status_code == 201
    token = (await client.post("/api/auth/guest")).json()["accessToken"]
    guest = {"Authorization": f"Bearer {token}"}

    refused = await client.post(
        "/agent/runs", json=on_agent(str(uuid.uuid4()), "hi", "writer"), headers=guest
    )
    assert (refused.status_code, refused.json()["code"]) == (403, "agent_not_for_guests")
    # A guest agent's models are the guest's to use, guest-visible in the catalogue or not.
    events = await run(client, guest, on_agent(str(uuid.uuid4()), "hi", "helpdesk"))
    assert events[-1]["type"] == "RUN_FINISHED"
    listed = (await client.get("/api/models", headers=guest)).json()["models"]
    assert "local/private" not in {m["ref"] for m in listed}


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
async def test_tools_and_the_turn_budget_are_the_agents(
    client: Client, alice: dict[str, str], auth: Auth
) -> None:
    admin = auth("root", "admin")
    for agent in (
        {
            "slug": "clock",
            "name": "Clock",
            "models": ["local/vision"],
            "tools": ["current_time"],
            "maxToolIterations": 1,
        },
        {"slug": "quiet", "name": "Quiet", "models": ["local/vision"]},
    ):
        assert (await client.post("/api/agents", json=agent, headers=admin)).status_code == 201

    clock = await run(client, alice, on_agent(str(uuid.uuid4()), "use tool current_time {}", "clock"))
    output = of_type(clock, "TOOL_CALL_RESULT")[0]["metadata"]["iris/toolAgentOutput"]
    assert (output["status"], output["error"]) == ("failed", "this run has used all 1 of its model turns")

    quiet = await run(client, alice, on_agent(str(uuid.uuid4()), "use tool current_time {}", "quiet"))
    assert not of_type(quiet, "TOOL_CALL_START")
    assert "I have no tool called current_time" in answer_text(quiet)


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
async def test_the_agents_reasoning_default_applies_unless_the_request_says(
    client: Client, alice: dict[str, str], auth: Auth
) -> None:
    thinker = {
        "slug": "thinker",
        "name": "Thinker",
        "models": ["local/vision"],
        "reasoning": {"enableThinking": True},
    }
    assert (await client.post("/api/agents", json=thinker, headers=auth("root", "admin"))).status_code == 201

    thought = await run(client, alice, on_agent(str(uuid.uuid4()), "hi", "thinker"))
    assert of_type(thought, "REASONING_START")
    plain = await run(client, alice, on_agent(str(uuid.uuid4()), "hi", "thinker", enableThinking=False))
    assert not of_type(plain, "REASONING_START")
