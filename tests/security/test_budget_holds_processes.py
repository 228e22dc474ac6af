"""Budgets under load (ADR 0085): two Iris processes on one PostgreSQL database, a loopback OpenAI that
reports known usage, and 50 concurrent requests against a small budget — a user's (stateless
``/v1/chat/completions`` calls), an API key's (the same) and an agent's (stored AG-UI runs). What was
spent stays within the budget and one request's cost; the rest are 429 ``budget_exceeded`` with
``Retry-After``; the usage report counts every admitted request; no hold is left afterwards."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from iris.app.persistence.repositories import SpendRepository
from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.iris_process import IrisProcess, iris_process
from tests.support.postgres import free_port
from tests.support.runs import run_input, user_message
from tests.support.waits import REQUEST_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["postgresql"], indirect=True)]

OPENAI_KEY = "sk-test-123"
BUDGET = 0.1
COST = 0.028
"""One answer's cost: the fake reports 21 input and 7 output tokens, at 1000 USD per million each."""
PRICING = {"input": 1000, "output": 1000}
PROMPT = "Say something short about budgets, please; this sentence is about a hundred characters long."
"""About 25 input tokens by Iris's estimate, so a hold (with 7 output tokens) is at least the cost."""
REQUESTS = 50

Auth = Callable[..., dict[str, str]]


@pytest.fixture
def workers(settings: Settings, tmp_path: Path, auth: Auth) -> Iterator[tuple[IrisProcess, IrisProcess]]:
    vendor = FakeOpenAI(api_key=OPENAI_KEY)
    for _ in range(3 * REQUESTS):
        vendor.text("Budgets ", "matter.")
    env = {
        "IRIS_DATA_DIR": settings.data_dir,
        "IRIS_DATABASE_URL": settings.effective_database_url,
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_BUDGET_USER_DAY_USD": str(BUDGET),
        "IRIS_BUDGET_HOLD_OUTPUT_TOKENS": "7",
        "OPENAI_API_KEY": OPENAI_KEY,
    }
    port_a, port_b = free_port(), free_port()
    with (
        serve_asgi(vendor.app) as vendor_base,
        iris_process(
            {**env, "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port_a}"}, port_a, tmp_path / "a.log"
        ) as a,
        iris_process(
            {**env, "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port_b}"}, port_b, tmp_path / "b.log"
        ) as b,
    ):
        model = {
            "name": "GPT-4o",
            "provider": "openai",
            "modelId": "gpt-4o",
            "type": "vision",
            "options": {"baseUrl": vendor_base + "/v1", "pricing": PRICING},
        }
        _ok(httpx.post(f"{a.base_url}/api/models", json=model, headers=auth("root", role="admin")))
        agent = {"slug": "budgeted", "name": "Budgeted", "models": ["openai/gpt-4o"], "budgetDayUsd": BUDGET}
        _ok(httpx.post(f"{a.base_url}/api/agents", json=agent, headers=auth("root", role="admin")))
        yield a, b


def _ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code in (200, 201), response.text
    body: dict[str, Any] = response.json()
    return body


def _completion(process: IrisProcess, headers: dict[str, str]) -> httpx.Response:
    body = {
        "model": "openai/gpt-4o",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": 7,
    }
    return httpx.post(f"{process.base_url}/v1/chat/completions", json=body, headers=headers, timeout=60)


def _agent_run(process: IrisProcess, headers: dict[str, str]) -> httpx.Response:
    body = run_input(f"thread-{uuid.uuid4().hex}", user_message(PROMPT), forwardedProps={"agent": "budgeted"})
    return httpx.post(f"{process.base_url}/agent/runs", json=body, headers=headers, timeout=60)


def _concurrently(
    a: IrisProcess, b: IrisProcess, call: Callable[[IrisProcess], httpx.Response]
) -> list[httpx.Response]:
    with ThreadPoolExecutor(max_workers=REQUESTS) as pool:
        return list(pool.map(call, [a, b] * (REQUESTS // 2)))


def _refusal_code(response: httpx.Response) -> str:
    body = response.json()
    return str(body["error"]["code"] if "error" in body else body["code"])


def _admitted(answers: list[httpx.Response]) -> int:
    """How many were answered; every other one was refused for the budget, with a Retry-After."""
    refused = [r for r in answers if r.status_code != 200]
    assert all(r.status_code == 429 for r in refused), [r.text for r in refused]
    assert {_refusal_code(r) for r in refused} <= {"budget_exceeded"}
    assert all(int(r.headers["retry-after"]) >= 1 for r in refused)
    admitted = len(answers) - len(refused)
    assert 1 <= admitted < len(answers)
    return admitted


def _cost(process: IrisProcess, auth: Auth, group_by: str, group: str) -> tuple[float, int]:
    """The usage report's cost for one group, and how many runs and calls it counts."""
    report = _ok(
        httpx.get(
            f"{process.base_url}/api/usage",
            params={"groupBy": group_by},
            headers=auth("root", role="admin"),
            timeout=REQUEST_SECONDS,
        )
    )
    rows = [row for row in report["rows"] if row["group"] == group]
    assert len(rows) == 1, report
    return float(rows[0]["cost"]), int(rows[0]["runs"]) + int(rows[0]["calls"])


async def _holding(database_url: str) -> int:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection, AsyncSession(bind=connection) as session:
            return await SpendRepository(session=session).holding()
    finally:
        await engine.dispose()


def _no_holds_left(database_url: str) -> None:
    """Every admitted request settled or released its hold (calls settle just after their answer)."""
    deadline = time.monotonic() + REQUEST_SECONDS
    while (held := asyncio.run(_holding(database_url))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert held == 0


def test_fifty_concurrent_requests_never_overspend_a_users_a_keys_or_an_agents_budget(
    workers: tuple[IrisProcess, IrisProcess], auth: Auth, settings: Settings
) -> None:
    a, b = workers
    user = auth("ulla")
    admitted = _admitted(_concurrently(a, b, lambda p: _completion(p, user)))
    _no_holds_left(settings.effective_database_url)
    spent, counted = _cost(a, auth, "user", "ulla")
    assert counted == admitted
    assert spent == pytest.approx(admitted * COST)
    assert spent <= BUDGET + COST + 1e-9

    key = _ok(
        httpx.post(
            f"{a.base_url}/api/keys",
            json={"name": "ci", "budgetDayUsd": BUDGET},
            headers=auth("root", role="admin"),
            timeout=REQUEST_SECONDS,
        )
    )
    by_key = {"Authorization": f"Bearer {key['key']}"}
    admitted = _admitted(_concurrently(a, b, lambda p: _completion(p, by_key)))
    _no_holds_left(settings.effective_database_url)
    spent, counted = _cost(b, auth, "key", key["id"])
    assert counted == admitted
    assert spent == pytest.approx(admitted * COST)
    assert spent <= BUDGET + COST + 1e-9

    admin = auth("root", role="admin")  # no user budget: the agent's is the one that holds
    admitted = _admitted(_concurrently(a, b, lambda p: _agent_run(p, admin)))
    _no_holds_left(settings.effective_database_url)
    spent, counted = _cost(a, auth, "agent", "budgeted")
    assert counted == admitted
    assert spent == pytest.approx(admitted * COST)
    assert spent <= BUDGET + COST + 1e-9
