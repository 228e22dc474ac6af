"""A model whose vendor key is not set: listed unavailable with the variable's name, refused before the
stream with the same words, and the key's value never shown once it is set."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.openapi import ProblemLog
from tests.support.run_fixtures import Stored
from tests.support.runs import run_input, user_message

Client = AsyncTestClient[Litestar]
SECRET = "sk-live-never-shown-42"

MODELS: list[dict[str, Any]] = [
    {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "vision", "guestVisible": True},
    {
        "name": "Router",
        "provider": "openai",
        "modelId": "meta/llama",
        "type": "text",
        "guestVisible": True,
        "options": {"baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "OPENROUTER_API_KEY"},
    },
    {
        "name": "Claude",
        "provider": "anthropic",
        "modelId": "claude-sonnet-4-5",
        "type": "vision",
        "guestVisible": True,
    },
]


async def _client_with(
    settings: Settings, environ: dict[str, str], auth: Callable[..., dict[str, str]]
) -> AsyncIterator[Client]:
    problems = ProblemLog()
    async with AsyncTestClient(app=create_app(settings, environ=environ)) as client:
        client.event_hooks["response"].append(problems)
        for body in MODELS:
            created = await client.post("/api/models", json=body, headers=auth("root", "admin"))
            assert created.status_code == 201, created.text
        await offer(client, auth("root", "admin"), *(f"{m['provider']}/{m['modelId']}" for m in MODELS))
        yield client
    assert problems.undocumented() == [], "answered but not in the OpenAPI document"


@pytest.fixture
async def keyless(settings: Settings, auth: Callable[..., dict[str, str]]) -> AsyncIterator[Client]:
    """Iris with no vendor key in its environment except Anthropic's."""
    async for client in _client_with(settings, {"ANTHROPIC_API_KEY": SECRET}, auth):
        yield client


async def test_listings_say_which_variable_is_not_set(
    keyless: Client, auth: Callable[..., dict[str, str]]
) -> None:
    listed = (await keyless.get("/api/models", headers=auth("alice"))).json()["models"]
    by_ref = {m["ref"]: m for m in listed}
    assert (by_ref["openai/gpt-4o"]["available"], by_ref["openai/gpt-4o"]["unavailableReason"]) == (
        False,
        "OPENAI_API_KEY is not set",
    )
    assert by_ref["openai/meta/llama"]["unavailableReason"] == "OPENROUTER_API_KEY is not set"
    assert by_ref["openai/gpt-4o"]["capabilities"]["vision"] is True  # still known: data, no I/O
    assert by_ref["anthropic/claude-sonnet-4-5"]["available"] is True
    assert "unavailableReason" not in by_ref["anthropic/claude-sonnet-4-5"]
    assert by_ref["local/vision"]["available"] is True  # the local model needs no key

    picker = (await keyless.get("/api/agents/default/models")).json()["models"]
    entries = {f"{m['provider']}/{m['modelId']}": m for m in picker}
    assert entries["openai/gpt-4o"]["available"] is False
    assert entries["openai/gpt-4o"]["unavailableReason"] == "OPENAI_API_KEY is not set"
    assert entries["anthropic/claude-sonnet-4-5"]["available"] is True
    assert "unavailableReason" not in entries["anthropic/claude-sonnet-4-5"]


@pytest.mark.parametrize(
    ("ref", "variable"), [("openai/gpt-4o", "OPENAI_API_KEY"), ("openai/meta/llama", "OPENROUTER_API_KEY")]
)
async def test_a_run_on_it_is_refused_before_the_stream(
    keyless: Client, alice: dict[str, str], stored: Stored, ref: str, variable: str
) -> None:
    before = await stored.counts()
    thread = str(uuid.uuid4())

    response = await keyless.post(
        "/agent/runs", json=run_input(thread, user_message("hi"), model=ref), headers=alice
    )

    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == "provider_key_missing"
    assert problem["extra"] == {"variable": variable}
    assert f"{variable} is not set" in problem["detail"]
    assert await stored.counts() == before  # nothing stored, no thread made

    chat = await keyless.post(
        "/api/agents/default/chat", json={"content": "hi", "modelId": ref}, headers=alice
    )
    assert (chat.status_code, chat.json()["code"]) == (503, "provider_key_missing")
    stateless = await keyless.post("/api/llm/chat", json={"modelId": ref, "content": "hi"}, headers=alice)
    assert (stateless.status_code, stateless.json()["code"]) == (503, "provider_key_missing")
    assert await stored.counts() == before


async def test_the_value_of_a_set_key_appears_nowhere(
    settings: Settings, auth: Callable[..., dict[str, str]]
) -> None:
    environ = {"OPENAI_API_KEY": SECRET, "OPENROUTER_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET}
    async for client in _client_with(settings, environ, auth):
        admin = auth("root", "admin")
        responses = [
            await client.get("/api/models", headers=admin),
            await client.get("/api/agents/default/models"),
            await client.get("/api/providers", headers=admin),
        ]
        assert all(m["available"] for m in responses[0].json()["models"])
        for response in responses:
            assert response.status_code == 200
            assert SECRET not in response.text
