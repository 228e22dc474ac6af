"""Reasoning end to end on the local model: asked for → streamed as AG-UI reasoning events before the
answer → stored with the assistant message → history on both surfaces → sent back to the model
(which refuses a changed thought) → superseded by a regenerate. And usage you can bill on."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.agents import offer
from tests.support.images import image_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import (
    answer_text,
    chat,
    chat_history,
    of_type,
    run,
    run_input,
    upload,
    user_message,
)

Client = AsyncTestClient[Litestar]
REASONING = (
    "REASONING_START",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_ENCRYPTED_VALUE",
    "REASONING_END",
)


async def add_model(
    client: Client, auth: Callable[..., dict[str, str]], model_id: str, **options: Any
) -> str:
    response = await client.post(
        "/api/models",
        json={
            "name": model_id,
            "provider": "local",
            "modelId": model_id,
            "type": "vision",
            "supportsTools": True,
            "guestVisible": True,
            "options": options,
        },
        headers=auth("root", "admin"),
    )
    assert response.status_code == 201, response.text
    await offer(client, auth("root", "admin"), response.json()["ref"])
    return str(response.json()["ref"])


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def worker(events: list[dict[str, Any]]) -> dict[str, Any]:
    (end,) = [
        e for e in of_type(events, "TEXT_MESSAGE_END") if "iris/workerAgentOutput" in e.get("metadata", {})
    ]
    output: dict[str, Any] = end["metadata"]["iris/workerAgentOutput"]
    return output


async def test_thinking_streams_before_the_answer_and_is_stored_and_shown(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    events = await chat(client, alice, {"content": "why is the sky blue?", "enableThinking": True})
    session = events[0]["threadId"]

    order = kinds(events)
    assert [k for k in order if k.startswith("REASONING")][:2] == [
        "REASONING_START",
        "REASONING_MESSAGE_START",
    ]
    assert order.index("REASONING_END") < order.index("TEXT_MESSAGE_START")  # closed before the text
    thought = "".join(e["delta"] for e in of_type(events, "REASONING_MESSAGE_CONTENT"))
    assert thought.startswith("Thinking (medium effort) about: why is the sky blue?")
    (opaque,) = of_type(events, "REASONING_ENCRYPTED_VALUE")
    (message_start,) = of_type(events, "REASONING_MESSAGE_START")
    assert opaque["subtype"] == "message"
    assert opaque["entityId"] == message_start["messageId"]
    output = worker(events)
    assert output["reasoningSummary"] == thought.strip()
    assert output["reasoningTokens"] == len(of_type(events, "REASONING_MESSAGE_CONTENT"))
    (usage,) = of_type(events, "RUN_FINISHED")[0]["usage"]
    assert usage["reasoningTokens"] == output["reasoningTokens"]
    assert usage["outputTokens"] > usage["reasoningTokens"]  # reasoning is part of the output

    rows = await stored.messages(session)
    assistant = rows[-1]
    assert assistant.parts == [
        {"type": "reasoning", "provider": "local", "text": thought, "signature": opaque["encryptedValue"]}
    ]
    _, answer = await chat_history(client, alice, session)
    assert answer["parts"][0] == {"type": "reasoning", "text": thought}
    assert answer["parts"][1] == {"type": "text", "text": answer["content"]}
    agui = (await client.get(f"/agent/threads/{session}/messages?format=ag-ui", headers=alice)).json()
    roles = [m["role"] for m in agui["messages"]]
    assert roles == ["user", "reasoning", "assistant"]
    reasoning = agui["messages"][1]
    assert reasoning["content"] == thought
    assert reasoning["encryptedValue"] == opaque["encryptedValue"]
    plain = (await client.get(f"/agent/threads/{session}/messages", headers=alice)).json()
    assert [m["role"] for m in plain["messages"]] == ["user", "assistant"]

    # The next turn sends the thought back unchanged: the local model checks its signature.
    again = await chat(
        client, alice, {"sessionId": session, "content": "and at sunset?", "enableThinking": True}
    )
    assert of_type(again, "RUN_FINISHED")


async def test_a_changed_thought_sent_back_is_refused(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    """Proof that stored reasoning really goes back to the model: tamper with it, and the model refuses."""
    events = await chat(client, alice, {"content": "think first", "enableThinking": True})
    session = events[0]["threadId"]
    await stored.edit_reasoning(session, "a different thought")
    again = await chat(client, alice, {"sessionId": session, "content": "next"})
    (error,) = of_type(again, "RUN_ERROR")
    assert error["code"] == "provider_bad_request"


async def test_reasoning_off_asks_for_none_and_shows_none(client: Client, alice: dict[str, str]) -> None:
    for body in ({"content": "hi"}, {"content": "hi", "enableThinking": False}):
        events = await chat(client, alice, body)
        assert not [k for k in kinds(events) if k.startswith("REASONING")]
        assert "reasoningSummary" not in worker(events)


async def test_effort_on_agent_runs_and_invalid_values(client: Client, alice: dict[str, str]) -> None:
    thread = str(uuid.uuid4())
    body = run_input(thread, user_message("plan a trip"))
    body["forwardedProps"] = {"reasoningEffort": "high"}
    events = await run(client, alice, body)
    thought = "".join(e["delta"] for e in of_type(events, "REASONING_MESSAGE_CONTENT"))
    assert thought.startswith("Thinking (high effort)")

    for props, field in (
        ({"reasoningEffort": "max"}, "forwardedProps.reasoningEffort"),
        ({"enableThinking": "yes"}, "forwardedProps.enableThinking"),
    ):
        bad = run_input(str(uuid.uuid4()), user_message("x"))
        bad["forwardedProps"] = props
        response = await client.post("/agent/runs", json=bad, headers=alice)
        assert response.status_code == 422
        assert response.json()["field"] == field


async def test_a_model_that_cannot_reason_says_so_once(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]]
) -> None:
    ref = await add_model(client, auth, "plain", reasoning=False)
    events = await chat(client, alice, {"content": "hi", "modelId": ref, "enableThinking": True})
    assert not [k for k in kinds(events) if k.startswith("REASONING")]
    notes = [e for e in events if "iris/reasoning" in (e.get("metadata") or {})]
    assert len(notes) == 1
    assert notes[0]["type"] == "RUN_STARTED"
    assert "cannot reason" in notes[0]["metadata"]["iris/reasoning"]

    models = (await client.get("/api/models", headers=alice)).json()["models"]
    by_ref = {m["ref"]: m for m in models}
    assert by_ref[ref]["capabilities"]["reasoning"]["supported"] is False
    assert by_ref["local/vision"]["capabilities"]["reasoning"]["supported"] is True


async def test_a_tool_loop_sends_the_thought_back_and_regenerate_supersedes_it(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    events = await chat(
        client, alice, {"content": 'use tool current_time {"timezone": "UTC"}', "enableThinking": True}
    )
    session = events[0]["threadId"]
    assert of_type(events, "TOOL_CALL_RESULT")
    assert "current_time returned" in answer_text(events)
    # One thought per model turn: both turns reasoned, the second one after the tool's answer.
    assert len(of_type(events, "REASONING_START")) == 2
    order = kinds(events)
    assert order.index("REASONING_END") < order.index("TOOL_CALL_START")

    first = [r.parts or [] for r in await stored.messages(session) if r.role == "assistant"]
    assert [p["type"] for p in first[0]] == ["reasoning", "tool_call"]

    await chat(client, alice, {"sessionId": session, "regenerate": True, "enableThinking": True})
    live = await chat_history(client, alice, session)
    everything = await chat_history(client, alice, session, "?includeSuperseded=true")
    assert len(everything) > len(live)
    superseded = [m for m in everything if "supersededAt" in m and m["role"] == "assistant"]
    assert superseded
    assert all(p["type"] in ("reasoning", "text") for m in superseded for p in m["parts"])
    live_thoughts = [p for m in live for p in m["parts"] if p["type"] == "reasoning"]
    assert len(live_thoughts) == 2  # the regenerated turns' own reasoning only


async def test_usage_estimates_images_prices_the_run_and_sums_the_session(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    pricing = {"input": 3.0, "output": 15.0, "currency": "USD"}
    ref = await add_model(client, auth, "priced", imageCostFormula="anthropic", pricing=pricing)
    session = str(uuid.uuid4())
    image = await upload(client, alice, session, data=image_bytes("PNG", (1092, 1092), (30, 60, 220)))
    body = {"sessionId": session, "modelId": ref, "parts": [image["parts"]["chat"]], "enableThinking": True}
    events = await chat(client, alice, body)

    user = (await stored.messages(session))[0]
    assert user.parts is not None
    estimate = user.parts[0]["tokenEstimate"]
    assert estimate["formula"] == "anthropic"
    assert estimate["tokens"] == 1590
    agui = await client.get(f"/agent/threads/{session}/messages?format=ag-ui", headers=alice)
    assert agui.json()["messages"][0]["content"][0]["metadata"]["estimatedTokens"] == 1590
    finished = of_type(events, "RUN_FINISHED")[0]
    billed = finished["metadata"]["iris/usage"]
    assert billed["estimatedImageTokens"] == 1590
    expected = billed["inputTokens"] * 3.0 / 1e6 + billed["outputTokens"] * 15.0 / 1e6
    assert abs(billed["cost"]["total"] - expected) < 1e-9
    assert worker(events)["usage"]["cost"] == billed["cost"]

    await chat(client, alice, {"sessionId": session, "modelId": ref, "content": "again"})
    response = await client.get(f"/api/agents/default/sessions/{session}/usage", headers=alice)
    assert response.status_code == 200, response.text
    summed = response.json()
    assert summed["sessionId"] == session  # the client's own id, echoed
    assert summed["runs"] == 2
    (entry,) = summed["usage"]
    assert entry["estimatedImageTokens"] == 2 * 1590  # the image went with both requests
    assert entry["cost"]["total"] > billed["cost"]["total"]
    other = await client.get(f"/api/agents/default/sessions/{session}/usage", headers=auth("mallory"))
    assert other.status_code == 404


async def test_a_models_options_set_the_default(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]]
) -> None:
    ref = await add_model(client, auth, "eager", enableThinking=True, reasoningEffort="low")
    events = await chat(client, alice, {"content": "hi", "modelId": ref})
    assert "".join(e["delta"] for e in of_type(events, "REASONING_MESSAGE_CONTENT")).startswith(
        "Thinking (low effort)"
    )
    quiet = await chat(client, alice, {"content": "hi", "modelId": ref, "enableThinking": False})
    assert not [k for k in kinds(quiet) if k.startswith("REASONING")]
