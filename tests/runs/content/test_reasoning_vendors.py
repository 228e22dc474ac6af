"""Reasoning through ``/agent/runs`` against loopback fakes speaking each vendor's real reasoning wire
format: requested only when asked, streamed as AG-UI reasoning events before the answer, the opaque
block sent back byte-identical where the vendor requires it, redacted thinking never shown as text."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support import fake_anthropic as fa
from tests.support import fake_gemini as fg
from tests.support.agents import offer
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI, ToolCallScript
from tests.support.http_server import serve_asgi
from tests.support.runs import answer_text, of_type, run, run_input, user_message

ANTHROPIC_KEY = "sk-ant-test-456"
GEMINI_KEY = "AIza-test-789"
OPENAI_KEY = "sk-test-123"
CLAUDE = "anthropic/claude-sonnet-4-5"
GEMINI = "gemini/gemini-2.5-flash"
Client = AsyncTestClient[Litestar]


@pytest.fixture
def anthropic() -> FakeAnthropic:
    return FakeAnthropic(api_key=ANTHROPIC_KEY)


@pytest.fixture
def gemini() -> FakeGemini:
    return FakeGemini(api_key=GEMINI_KEY)


@pytest.fixture
def openai() -> FakeOpenAI:
    return FakeOpenAI(api_key=OPENAI_KEY)


@pytest.fixture
def ollama() -> FakeOllama:
    return FakeOllama(model="qwen3")


@pytest.fixture
async def vendor_client(
    settings: Settings,
    anthropic: FakeAnthropic,
    gemini: FakeGemini,
    openai: FakeOpenAI,
    ollama: FakeOllama,
    auth: Callable[..., dict[str, str]],
) -> AsyncIterator[Client]:
    """Iris with vendor keys in its environment and one catalogue model per fake."""
    environ = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "GEMINI_API_KEY": GEMINI_KEY, "OPENAI_API_KEY": OPENAI_KEY}
    with (
        serve_asgi(anthropic.app) as anthropic_base,
        serve_asgi(gemini.app) as gemini_base,
        serve_asgi(openai.app) as openai_base,
        serve_asgi(ollama.app) as ollama_base,
    ):
        async with AsyncTestClient(app=create_app(settings, environ=environ)) as client:
            admin = auth("root", role="admin")
            for provider, model_id, options in (
                ("anthropic", "claude-sonnet-4-5", {"baseUrl": anthropic_base}),
                ("gemini", "gemini-2.5-flash", {"baseUrl": gemini_base}),
                ("openai", "o3", {"baseUrl": openai_base + "/v1"}),
                ("openai", "deepseek-reasoner", {"baseUrl": openai_base + "/v1", "reasoning": True}),
                ("ollama", "qwen3", {"baseUrl": ollama_base, "reasoning": True}),
            ):
                body = {
                    "name": model_id,
                    "provider": provider,
                    "modelId": model_id,
                    "type": "vision",
                    "supportsTools": True,
                    "options": options,
                }
                created = await client.post("/api/models", json=body, headers=admin)
                assert created.status_code == 201, created.text
                await offer(client, admin, f"{provider}/{model_id}")
            yield client


def thinking_input(thread: str, text: str, model: str, **props: Any) -> dict[str, Any]:
    body = run_input(thread, user_message(text), model=model)
    body["forwardedProps"].update(props)
    return body


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def reasoning_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in of_type(events, "REASONING_MESSAGE_CONTENT"))


async def test_anthropic_thinking_round_trips_through_a_tool_loop(
    vendor_client: Client, anthropic: FakeAnthropic, alice: dict[str, str]
) -> None:
    anthropic.reply(
        [
            fa.message_start(30),
            *fa.thinking_block(0, ["Let me ", "check the clock."], "EqQBCkgIARABGAIi+sig/1=="),
            *fa.tool_block(1, "toolu_01", "current_time", ['{"timezone":', ' "UTC"}']),
            *fa.message_end("tool_use", 40),
        ]
    )
    anthropic.reply(
        [
            fa.message_start(80),
            *fa.redacted_thinking_block(0, "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3"),
            *fa.text_block(1, ["It is ", "noon."]),
            *fa.message_end("end_turn", 12),
        ]
    )
    thread = str(uuid.uuid4())
    events = await run(
        vendor_client, alice, thinking_input(thread, "What time is it?", CLAUDE, enableThinking=True)
    )

    first, second = (request.json for request in anthropic.requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert first["max_tokens"] > 4096
    order = kinds(events)
    assert order.index("REASONING_END") < order.index("TOOL_CALL_START")
    assert reasoning_text(events) == "Let me check the clock."
    signature, redacted = of_type(events, "REASONING_ENCRYPTED_VALUE")
    assert signature["encryptedValue"] == "EqQBCkgIARABGAIi+sig/1=="
    # The continuation starts its assistant turn with the thinking block, byte for byte.
    assistant = second["messages"][-2]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "Let me check the clock.",
        "signature": "EqQBCkgIARABGAIi+sig/1==",
    }
    assert assistant["content"][1]["type"] == "tool_use"
    # Redacted thinking: an opaque value, never text.
    assert redacted["encryptedValue"].startswith("EmwKAhgBEgy3va3")
    assert "EmwKAhgBEgy3va3" not in reasoning_text(events) + answer_text(events)
    assert answer_text(events) == "It is noon."

    chat = await vendor_client.get(f"/api/agents/default/sessions/{thread}/messages", headers=alice)
    thoughts = [p for m in chat.json()["messages"] for p in m["parts"] if p["type"] == "reasoning"]
    assert thoughts == [
        {"type": "reasoning", "text": "Let me check the clock."},
        {"type": "reasoning", "text": "", "redacted": True},
    ]
    agui = await vendor_client.get(f"/agent/threads/{thread}/messages?format=ag-ui", headers=alice)
    reasoning = [m for m in agui.json()["messages"] if m["role"] == "reasoning"]
    assert [(m["content"], m["encryptedValue"][:8]) for m in reasoning] == [
        ("Let me check the clock.", "EqQBCkgI"),
        ("", "EmwKAhgB"),
    ]

    # The next user turn: earlier thinking is dropped, as the vendor allows.
    anthropic.reply(fa.text_answer(["Sure."]))
    await run(vendor_client, alice, thinking_input(thread, "Thanks", CLAUDE, enableThinking=True))
    third = anthropic.requests[-1].json
    sent_types = [b["type"] for m in third["messages"] for b in m["content"]]
    assert "thinking" not in sent_types
    assert "redacted_thinking" not in sent_types


async def test_anthropic_reasoning_off_requests_and_shows_none(
    vendor_client: Client, anthropic: FakeAnthropic, alice: dict[str, str]
) -> None:
    anthropic.reply(fa.text_answer(["Hello."]))
    events = await run(vendor_client, alice, thinking_input(str(uuid.uuid4()), "hi", CLAUDE))
    assert "thinking" not in anthropic.requests[0].json
    assert not [k for k in kinds(events) if k.startswith("REASONING")]


async def test_gemini_thoughts_stream_and_thought_signatures_ride_on_their_calls(
    vendor_client: Client, gemini: FakeGemini, alice: dict[str, str]
) -> None:
    signature = "CiQB0e2Kb3wF+Gv9yBVcG/sig=="
    call = {
        "functionCall": {"name": "current_time", "args": {"timezone": "UTC"}},
        "thoughtSignature": signature,
    }
    gemini.reply(
        [
            fg.chunk([{"text": "The user wants the time.", "thought": True}], thoughts=20),
            fg.chunk([call], finish="STOP", candidate_tokens=5, thoughts=20),
        ]
    )
    gemini.reply(fg.text_answer(["It is ", "noon."]))
    thread = str(uuid.uuid4())
    events = await run(
        vendor_client, alice, thinking_input(thread, "What time is it?", GEMINI, enableThinking=True)
    )

    first, second = (request.json for request in gemini.requests)
    assert first["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 4096}
    assert reasoning_text(events) == "The user wants the time."
    order = kinds(events)
    assert order.index("REASONING_END") < order.index("TOOL_CALL_START")
    (opaque,) = of_type(events, "REASONING_ENCRYPTED_VALUE")
    (started,) = of_type(events, "TOOL_CALL_START")
    assert opaque["subtype"] == "tool-call"
    assert opaque["entityId"] == started["toolCallId"]
    assert opaque["encryptedValue"] == signature
    assert of_type(events, "RUN_FINISHED")[0]["usage"][0]["reasoningTokens"] == 20
    model_turn = next(c for c in second["contents"] if c["role"] == "model")
    assert model_turn["parts"][0]["thoughtSignature"] == signature  # byte for byte, on its call
    assert "The user wants" not in json.dumps(model_turn)  # thought text is never sent back

    agui = await vendor_client.get(f"/agent/threads/{thread}/messages?format=ag-ui", headers=alice)
    calls = [c for m in agui.json()["messages"] for c in m.get("toolCalls", [])]
    assert calls[0]["encryptedValue"] == signature

    # The next user turn carries the signature on the call in history too.
    gemini.reply(fg.text_answer(["Bye."]))
    await run(vendor_client, alice, thinking_input(thread, "Thanks", GEMINI))
    third = gemini.requests[-1].json
    assert "thinkingConfig" not in third.get("generationConfig", {})  # reasoning off: none requested
    replayed = [p for c in third["contents"] for p in c["parts"] if "functionCall" in p]
    assert replayed[0]["thoughtSignature"] == signature


async def test_openai_reasoning_effort_and_token_counts(
    vendor_client: Client, openai: FakeOpenAI, alice: dict[str, str]
) -> None:
    """OpenAI's reasoning models take ``reasoning_effort`` and stream no reasoning text, but count it."""
    openai.reasoning([], ["Four."], reasoning_tokens=192)
    events = await run(
        vendor_client, alice, thinking_input(str(uuid.uuid4()), "2+2?", "openai/o3", reasoningEffort="high")
    )
    assert openai.requests[0].json["reasoning_effort"] == "high"
    assert not [k for k in kinds(events) if k.startswith("REASONING")]
    (usage,) = of_type(events, "RUN_FINISHED")[0]["usage"]
    assert usage["reasoningTokens"] == 192
    assert usage["outputTokens"] == 197

    openai.text("Plain.")
    await run(vendor_client, alice, thinking_input(str(uuid.uuid4()), "hi", "openai/o3"))
    assert "reasoning_effort" not in openai.requests[-1].json  # reasoning off: none requested


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
async def test_compatible_servers_stream_reasoning_text(
    vendor_client: Client, openai: FakeOpenAI, alice: dict[str, str], key: str
) -> None:
    openai.reasoning(["The user ", "greets me."], ["Hello!"], key=key)
    thread = str(uuid.uuid4())
    model = "openai/deepseek-reasoner"
    events = await run(vendor_client, alice, thinking_input(thread, "hi", model, enableThinking=True))
    assert openai.requests[0].json["reasoning_effort"] == "medium"
    assert reasoning_text(events) == "The user greets me."
    order = kinds(events)
    assert order.index("REASONING_END") < order.index("TEXT_MESSAGE_START")
    assert answer_text(events) == "Hello!"

    # A tool loop: the reasoning is never sent back as reasoning_content (such servers refuse it).
    openai.tool_calls([ToolCallScript(id="call_1", name="current_time", argument_pieces=["{}"])])
    openai.text("Noon.")
    await run(vendor_client, alice, thinking_input(thread, "time?", model, enableThinking=True))
    sent = json.dumps(openai.requests[-1].json)
    assert "greets me" not in sent
    assert "reasoning_content" not in sent


async def test_ollama_think_streams_message_thinking(
    vendor_client: Client, ollama: FakeOllama, alice: dict[str, str]
) -> None:
    ollama.thinking(["Okay, ", "a greeting."], ["Hi ", "there."])
    events = await run(
        vendor_client, alice, thinking_input(str(uuid.uuid4()), "hi", "ollama/qwen3", enableThinking=True)
    )
    assert ollama.requests[0].json["think"] is True
    assert reasoning_text(events) == "Okay, a greeting."
    assert answer_text(events) == "Hi there."
    order = kinds(events)
    assert order.index("REASONING_END") < order.index("TEXT_MESSAGE_START")

    ollama.text("Plain.")
    events = await run(vendor_client, alice, thinking_input(str(uuid.uuid4()), "hi", "ollama/qwen3"))
    assert "think" not in ollama.requests[-1].json
    assert not [k for k in kinds(events) if k.startswith("REASONING")]
