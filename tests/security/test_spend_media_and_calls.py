"""What a request costs beyond its tokens, and the spend of calls that store no run: prices per image,
PDF page and audio second apply to what was sent (a real PNG, PDF and WAV made here); the stateless
calls (``/v1/chat/completions``, ``/api/llm/chat``) leave ledger rows, so a user's and a key's spend
is the sum of their runs' and calls' costs."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.documents import text_pdf, wav_bytes
from tests.support.images import image_bytes
from tests.support.runs import of_type, run, run_input, user_message

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]
PRICING = {"input": 2.0, "output": 4.0, "perImage": 0.5, "perPdfPage": 0.25, "perAudioSecond": 0.01}
DEAR = {"input": 1000.0, "output": 1000.0}


async def _model(client: Client, auth: Auth) -> str:
    admin = auth("root", "admin")
    body = {
        "name": "Priced multimodal",
        "provider": "local",
        "modelId": "priced-multimodal",
        "type": "multimodal",
        "options": {"pricing": PRICING},
    }
    response = await client.post("/api/models", json=body, headers=admin)
    assert response.status_code == 201, response.text
    assert response.json()["options"]["pricing"]["perPdfPage"] == 0.25  # the model API shows the prices
    await offer(client, admin, response.json()["ref"])
    return str(response.json()["ref"])


def _tokens(prompt: int, completion: int, pricing: dict[str, float] = PRICING) -> float:
    return (prompt * pricing["input"] + completion * pricing["output"]) / 1_000_000


async def _usage(client: Client, auth: Auth, group_by: str, calls: int) -> dict[str | None, dict[str, Any]]:
    """The report by ``group_by`` once ``calls`` calls settled (each just after its answer)."""
    for _ in range(100):
        report = await client.get(f"/api/usage?groupBy={group_by}", headers=auth("root", "admin"))
        rows = {row["group"]: row for row in report.json()["rows"]}
        if sum(row["calls"] for row in rows.values()) >= calls:
            return rows
        await asyncio.sleep(0.05)
    raise AssertionError(f"the calls did not settle: {rows}")


async def test_media_prices_apply_to_the_image_pdf_pages_and_audio_seconds_sent(
    client: Client, auth: Auth
) -> None:
    ref = await _model(client, auth)
    png = base64.b64encode(image_bytes("PNG", (64, 48))).decode()
    pdf = base64.b64encode(text_pdf(["Page one says hello.", "Page two says goodbye."])).decode()
    wav = base64.b64encode(wav_bytes(2.0)).decode()
    content = [
        {"type": "text", "text": "What are these?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
        {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{pdf}", "filename": "a.pdf"}},
        {"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}},
    ]
    body = {"model": ref, "messages": [{"role": "user", "content": content}]}
    answered = await client.post("/v1/chat/completions", json=body, headers=auth("mia"))
    assert answered.status_code == 200, answered.text
    usage = answered.json()["usage"]
    media = 1 * 0.5 + 2 * 0.25 + 2.0 * 0.01
    rows = await _usage(client, auth, "user", calls=1)
    expected = _tokens(usage["prompt_tokens"], usage["completion_tokens"]) + media
    assert rows["mia"]["cost"] == pytest.approx(expected, abs=1e-6)
    assert (rows["mia"]["runs"], rows["mia"]["calls"]) == (0, 1)


async def test_spend_per_user_and_key_is_the_sum_of_runs_and_calls(client: Client, auth: Auth) -> None:
    ref = await _model(client, auth)
    events = await run(
        client, auth("ned"), run_input(str(uuid.uuid4()), user_message("hello there"), model=ref)
    )
    run_cost = float(of_type(events, "RUN_FINISHED")[0]["metadata"]["iris/usage"]["cost"]["total"])
    made = await client.post("/api/keys", json={"name": "ci"}, headers=auth("ned"))
    assert made.status_code == 201, made.text
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    chat = {"modelId": ref, "content": "say hello", "stream": False}
    answered = await client.post("/api/llm/chat", json=chat, headers=key)
    assert answered.status_code == 200, answered.text
    chat_usage = answered.json()["usage"]
    chat_cost = _tokens(chat_usage["inputTokens"], chat_usage["outputTokens"])
    body = {"model": ref, "messages": [{"role": "user", "content": "and goodbye"}]}
    completed = await client.post("/v1/chat/completions", json=body, headers=auth("ned"))
    assert completed.status_code == 200, completed.text
    completion_cost = _tokens(
        completed.json()["usage"]["prompt_tokens"], completed.json()["usage"]["completion_tokens"]
    )

    by_user = await _usage(client, auth, "user", calls=2)
    assert (by_user["ned"]["runs"], by_user["ned"]["calls"]) == (1, 2)
    assert by_user["ned"]["cost"] == pytest.approx(run_cost + chat_cost + completion_cost, abs=1e-6)
    by_key = await _usage(client, auth, "key", calls=2)
    assert by_key[made.json()["id"]]["calls"] == 1
    assert by_key[made.json()["id"]]["cost"] == pytest.approx(chat_cost, abs=1e-6)
    by_model = await _usage(client, auth, "model", calls=2)
    assert by_model[ref]["cost"] == pytest.approx(run_cost + chat_cost + completion_cost, abs=1e-6)
    exported = await client.get("/api/usage/export?groupBy=user", headers=auth("root", "admin"))
    assert exported.text.splitlines()[0].endswith(",calls")


async def test_an_agents_budget_is_set_shown_audited_and_refuses_its_next_run(
    client: Client, auth: Auth
) -> None:
    ref = await _model(client, auth)
    admin = auth("root", "admin")
    changed = await client.patch("/api/agents/default", json={"budgetDayUsd": 1e-9}, headers=admin)
    assert changed.status_code == 200, changed.text
    assert changed.json()["budgetDayUsd"] == 1e-9
    assert "budgetMonthUsd" not in changed.json()
    audited = (await client.get("/api/audit?action=PATCH", headers=admin)).json()["entries"]
    assert (audited[0]["target"], audited[0]["actor"]) == ("/api/agents/default", "root")  # newest first

    first = await run(client, auth("olga"), run_input(str(uuid.uuid4()), user_message("hello"), model=ref))
    assert of_type(first, "RUN_FINISHED")  # under the budget when it started: it finishes
    body = run_input(str(uuid.uuid4()), user_message("hello again"), model=ref)
    refused = await client.post("/agent/runs", json=body, headers=auth("pat"))  # any user: the agent's
    assert (refused.status_code, refused.json()["code"]) == (429, "budget_exceeded")
    assert refused.json()["extra"]["limit"] == "budget_agent_day_usd"
    assert int(refused.headers["retry-after"]) >= 1

    cleared = await client.patch("/api/agents/default", json={"budgetDayUsd": None}, headers=admin)
    assert "budgetDayUsd" not in cleared.json()
    await run(client, auth("pat"), run_input(str(uuid.uuid4()), user_message("hello again"), model=ref))


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
async def test_concurrent_calls_hold_a_users_budget_on_sqlite(settings: Settings, auth: Auth) -> None:
    """SQLite's write lock serialises the budget check and the hold as PostgreSQL's row lock does (the
    two-process test): 20 calls at once pass the budget by at most one call's cost."""
    budgeted = msgspec.structs.replace(settings, budget_user_day_usd=0.03)
    async with AsyncTestClient(app=create_app(budgeted, environ={})) as client:
        admin = auth("root", "admin")
        body = {
            "name": "P",
            "provider": "local",
            "modelId": "p",
            "type": "vision",
            "options": {"pricing": DEAR},
        }
        assert (await client.post("/api/models", json=body, headers=admin)).status_code == 201
        ask = {
            "model": "local/p",
            "messages": [{"role": "user", "content": "Say something short"}],
            "max_tokens": 5,
        }
        answers = await asyncio.gather(
            *(client.post("/v1/chat/completions", json=ask, headers=auth("quinn")) for _ in range(20))
        )
        ok = [a for a in answers if a.status_code == 200]
        assert all(a.json()["error"]["code"] == "budget_exceeded" for a in answers if a.status_code != 200)
        assert 1 <= len(ok) < len(answers)
        costs = [
            _tokens(a.json()["usage"]["prompt_tokens"], a.json()["usage"]["completion_tokens"], DEAR)
            for a in ok
        ]
        rows = await _usage(client, auth, "user", calls=len(ok))
    assert rows["quinn"]["cost"] == pytest.approx(sum(costs), abs=1e-6)
    assert rows["quinn"]["cost"] <= 0.03 + max(costs) + 1e-9
