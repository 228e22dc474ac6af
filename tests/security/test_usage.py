"""Spend: ``GET /api/usage`` sums the runs' stored costs by user, agent, model and day, as JSON and CSV;
a user's daily budget refuses the run after the one that crossed it."""

from __future__ import annotations

import asyncio
import csv
import io
import time
import uuid
from collections.abc import Callable

import msgspec
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.runs import of_type, run, run_input, user_message

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]
PRICING = {"input": 3.0, "output": 15.0, "cachedInput": 0.3, "reasoning": 15.0, "currency": "USD"}


async def _priced_model(client: Client, auth: Auth) -> str:
    admin = auth("root", "admin")
    body = {
        "name": "priced",
        "provider": "local",
        "modelId": "priced",
        "type": "vision",
        "options": {"pricing": PRICING},
    }
    response = await client.post("/api/models", json=body, headers=admin)
    assert response.status_code == 201, response.text
    await offer(client, admin, response.json()["ref"])
    return str(response.json()["ref"])


async def _cost_of_run(client: Client, headers: dict[str, str], ref: str) -> float:
    events = await run(client, headers, run_input(str(uuid.uuid4()), user_message("hello there"), model=ref))
    cost = of_type(events, "RUN_FINISHED")[0]["metadata"]["iris/usage"]["cost"]["total"]
    assert cost > 0
    return float(cost)


async def test_spend_per_user_model_agent_and_day_equals_the_runs_costs(client: Client, auth: Auth) -> None:
    ref = await _priced_model(client, auth)
    alice_costs = [await _cost_of_run(client, auth("alice"), ref) for _ in range(2)]
    bob_cost = await _cost_of_run(client, auth("bob"), ref)
    admin = auth("root", "admin")

    by_user = (await client.get("/api/usage?groupBy=user", headers=admin)).json()
    spent = {row["group"]: row["cost"] for row in by_user["rows"]}
    assert abs(spent["alice"] - sum(alice_costs)) < 1e-6
    assert abs(spent["bob"] - bob_cost) < 1e-6
    assert {row["group"]: row["runs"] for row in by_user["rows"]} == {"alice": 2, "bob": 1}
    assert abs(by_user["totalCost"] - sum(alice_costs) - bob_cost) < 1e-6

    by_model = (await client.get("/api/usage?groupBy=model", headers=admin)).json()["rows"]
    assert [(row["group"], row["runs"]) for row in by_model] == [(ref, 3)]
    by_agent = (await client.get("/api/usage?groupBy=agent", headers=admin)).json()["rows"]
    assert [(row["group"], row["runs"]) for row in by_agent] == [("default", 3)]
    by_day = (await client.get("/api/usage?groupBy=day", headers=admin)).json()["rows"]
    assert len(by_day) == 1
    assert by_day[0]["inputTokens"] > 0

    own = (await client.get("/api/usage?groupBy=user", headers=auth("alice"))).json()
    assert [row["group"] for row in own["rows"]] == ["alice"]
    assert own["user"] == "alice"
    refused = await client.get("/api/usage?user=bob", headers=auth("alice"))
    assert (refused.status_code, refused.json()["code"]) == (403, "admin_required")
    backwards = await client.get("/api/usage?since=2026-02-01&until=2026-01-01", headers=admin)
    assert (backwards.status_code, backwards.json()["code"]) == (422, "usage_range_invalid")

    exported = await client.get("/api/usage/export?groupBy=user", headers=admin)
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("text/csv")
    lines = list(csv.reader(io.StringIO(exported.text)))
    assert lines[0] == ["user", "runs", "cost_usd", "input_tokens", "output_tokens", "calls"]
    assert {line[0]: int(line[1]) for line in lines[1:]} == {"alice": 2, "bob": 1}


async def test_a_run_crossing_the_daily_budget_finishes_and_the_next_is_refused(
    settings: Settings, auth: Auth
) -> None:
    budgeted = msgspec.structs.replace(settings, budget_user_day_usd=0.0001)
    async with AsyncTestClient(app=create_app(budgeted, environ={})) as client:
        ref = await _priced_model(client, auth)
        first = await _cost_of_run(client, auth("alice"), ref)  # under budget when it starts
        assert first > 0.0001  # it crossed the budget, and finished
        body = run_input(str(uuid.uuid4()), user_message("again"), model=ref)
        refused = await client.post("/agent/runs", json=body, headers=auth("alice"))
        assert (refused.status_code, refused.json()["code"]) == (429, "budget_exceeded")
        assert 1 <= int(refused.headers["retry-after"]) <= 86_400
        chat = {"model": ref, "messages": [{"role": "user", "content": "hi"}]}
        gateway = await client.post("/v1/chat/completions", json=chat, headers=auth("alice"))
        assert gateway.status_code == 429
        assert gateway.json()["error"]["code"] == "budget_exceeded"  # OpenAI's shape under /v1
        assert "retry-after" in gateway.headers
        assert (await _cost_of_run(client, auth("bob"), ref)) > 0  # budgets are per user


async def test_spend_per_key_is_the_sum_of_the_runs_the_key_started(client: Client, auth: Auth) -> None:
    ref = await _priced_model(client, auth)
    made = (await client.post("/api/keys", json={"name": "ci"}, headers=auth("alice"))).json()
    by_key = [await _cost_of_run(client, {"x-api-key": made["key"]}, ref) for _ in range(2)]
    by_token = await _cost_of_run(client, auth("alice"), ref)

    report = (await client.get("/api/usage?groupBy=key", headers=auth("alice"))).json()
    spent = {row["group"]: (row["runs"], row["cost"]) for row in report["rows"]}
    assert set(spent) == {made["id"], None}
    assert spent[made["id"]][0] == 2
    assert abs(spent[made["id"]][1] - sum(by_key)) < 1e-6
    assert abs(spent[None][1] - by_token) < 1e-6


async def test_a_key_over_its_budget_is_refused_and_its_owner_is_not(client: Client, auth: Auth) -> None:
    ref = await _priced_model(client, auth)
    body = {"name": "ci", "budgetDayUsd": 0.0001}
    made = (await client.post("/api/keys", json=body, headers=auth("alice"))).json()
    assert made["budgetDayUsd"] == 0.0001
    key = {"x-api-key": made["key"]}
    assert await _cost_of_run(client, key, ref) > 0.0001  # under budget when it starts: it finishes
    again = run_input(str(uuid.uuid4()), user_message("again"), model=ref)
    refused = await client.post("/agent/runs", json=again, headers=key)
    assert (refused.status_code, refused.json()["code"]) == (429, "budget_exceeded")
    assert 1 <= int(refused.headers["retry-after"]) <= 86_400
    chat = {"model": ref, "messages": [{"role": "user", "content": "hi"}]}
    gateway = await client.post("/v1/chat/completions", json=chat, headers=key)
    assert (gateway.status_code, gateway.json()["error"]["code"]) == (429, "budget_exceeded")
    anthropic = {"model": ref, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    messages = await client.post("/v1/messages", json=anthropic, headers=key)
    assert messages.status_code == 429  # Anthropic's shape under /v1/messages
    assert messages.json()["error"]["type"] == "rate_limit_error"
    assert int(messages.headers["retry-after"]) >= 1
    assert await _cost_of_run(client, auth("alice"), ref) > 0  # the key's budget, not alice's


async def _early_in_the_minute() -> None:
    """Start where the minute has room for two runs (the token limits count per minute)."""
    if (second := time.time() % 60) > 45:
        await asyncio.sleep(61 - second)


async def test_tokens_per_minute_per_key_and_per_user_refuse_the_next_run(
    settings: Settings, auth: Auth
) -> None:
    limited = msgspec.structs.replace(settings, quota_user_tokens_per_minute=1)
    async with AsyncTestClient(app=create_app(limited, environ={})) as client:
        ref = await _priced_model(client, auth)
        made = await client.post(
            "/api/keys", json={"name": "ci", "tokensPerMinute": 1}, headers=auth("root", "admin")
        )
        key = {"x-api-key": made.json()["key"]}  # an admin's key: only the key's own limit binds it
        await _early_in_the_minute()
        for caller in (key, auth("alice")):
            await _cost_of_run(client, caller, ref)  # no tokens used yet this minute
            body = run_input(str(uuid.uuid4()), user_message("again"), model=ref)
            refused = await client.post("/agent/runs", json=body, headers=caller)
            assert (refused.status_code, refused.json()["code"]) == (429, "rate_limited")
            assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert await _cost_of_run(client, auth("bob"), ref) > 0  # per user
