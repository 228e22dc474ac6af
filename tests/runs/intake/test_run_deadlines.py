"""Run deadlines against a loopback fake OpenAI that stalls: no headers, silence after 200, keep-alive
comments only, content trickling forever. Each run ends with one ``RUN_ERROR`` and its own code, soon
after its deadline; the thread is free again and the database holds no answer."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.agui import check_stream
from tests.support.fake_openai import FakeOpenAI, Stall
from tests.support.http_server import serve_asgi
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, run, run_input, user_message
from tests.support.waits import REQUEST_SECONDS

OPENAI_KEY = "sk-test-123"
DEADLINE = 1.0
SLACK = 20.0
"""How late after its deadline a run may end on a loaded machine. The bound only tells which deadline
ended the wait: the next one that could have is 30 s or more away (the models' other options, the
settings' 60 s run bound)."""
Client = AsyncTestClient[Litestar]


@pytest.fixture
def openai() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key=OPENAI_KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.fixture
async def client(
    settings: Settings, openai: tuple[FakeOpenAI, str], auth: Callable[..., dict[str, str]]
) -> AsyncIterator[Client]:
    """Iris whose settings put the first-token and idle deadlines at 1 s (``openai/gpt-4o`` uses them);
    ``openai/slow-start``, whose option gives the first token 30 s (so the idle deadline after it is
    the one that fires, however late a loaded machine sends it); ``openai/run-bound``, whose options
    override all three: 30 s to start and between chunks, 2 s for the whole run; and
    ``openai/patient``, whose deadlines a loaded machine never reaches, for the run after a stall."""
    short = msgspec.structs.replace(
        settings, first_token_timeout_seconds=DEADLINE, idle_timeout_seconds=DEADLINE, run_timeout_seconds=60
    )
    async with AsyncTestClient(app=create_app(short, environ={"OPENAI_API_KEY": OPENAI_KEY})) as test_client:
        admin = auth("root", role="admin")
        base = openai[1] + "/v1"
        for model_id, options in (
            ("gpt-4o", {}),
            ("slow-start", {"firstTokenTimeoutSeconds": 30}),
            (
                "run-bound",
                {"firstTokenTimeoutSeconds": 30, "idleTimeoutSeconds": 30, "runTimeoutSeconds": 2 * DEADLINE},
            ),
            (
                "patient",
                {
                    "firstTokenTimeoutSeconds": REQUEST_SECONDS,
                    "idleTimeoutSeconds": REQUEST_SECONDS,
                    "runTimeoutSeconds": REQUEST_SECONDS,
                },
            ),
        ):
            created = await test_client.post(
                "/api/models",
                json={
                    "name": model_id,
                    "provider": "openai",
                    "modelId": model_id,
                    "type": "vision",
                    "options": {"baseUrl": base, **options},
                },
                headers=admin,
            )
            assert created.status_code == 201, created.text
        await offer(
            test_client, admin, "openai/gpt-4o", "openai/slow-start", "openai/run-bound", "openai/patient"
        )
        yield test_client


async def _timed_run(client: Client, alice: dict[str, str], body: dict[str, Any]) -> tuple[list[Any], float]:
    started = time.monotonic()
    events = await run(client, alice, body)
    return events, time.monotonic() - started


async def _assert_failed_cleanly(
    client: Client, openai: FakeOpenAI, alice: dict[str, str], stored: Stored, body: dict[str, Any], code: str
) -> None:
    """The stored run agrees with the stream, nothing of the answer is kept, and the thread is free."""
    run_row = await stored.run(body["runId"])
    assert run_row is not None
    assert (run_row.status, run_row.error_code) == ("failed", code)
    assert [r.role for r in await stored.messages(body["threadId"])] == ["user"]
    assert (await stored.events(body["runId"]))[-1]["code"] == code
    openai.reset()  # on a loaded machine the stalled request may not have reached the fake in time
    openai.text("Back again.")
    again = await run(
        client, alice, run_input(body["threadId"], user_message("again"), model="openai/patient")
    )
    assert answer_text(again) == "Back again."


@pytest.mark.parametrize(
    ("stall", "pieces", "model", "code"),
    [
        pytest.param("no_headers", (), "gpt-4o", "provider_timeout", id="never-answers-headers"),
        pytest.param("silent", (), "gpt-4o", "provider_timeout", id="silent-after-200"),
        pytest.param("keepalive", (), "gpt-4o", "provider_timeout", id="keepalives-only"),
        pytest.param(
            "silent", ("Half an ",), "slow-start", "provider_idle_timeout", id="silent-after-content"
        ),
        pytest.param(
            "keepalive", ("Half an ",), "slow-start", "provider_idle_timeout", id="keepalives-after-content"
        ),
    ],
)
async def test_a_stalled_vendor_ends_the_run_with_its_deadline_code(
    client: Client,
    openai: tuple[FakeOpenAI, str],
    alice: dict[str, str],
    stored: Stored,
    stall: Stall,
    pieces: tuple[str, ...],
    model: str,
    code: str,
) -> None:
    fake, _ = openai
    fake.stalled(stall, *pieces, every=0.2)  # keep-alives come 5x faster than the idle deadline
    body = run_input(str(uuid.uuid4()), user_message("hello"), model=f"openai/{model}")

    events, elapsed = await _timed_run(client, alice, body)

    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == code
    assert len(of_type(events, "RUN_ERROR")) == 1
    assert answer_text(events) == "".join(pieces)
    assert DEADLINE <= elapsed < DEADLINE + SLACK
    await _assert_failed_cleanly(client, fake, alice, stored, body, code)


@pytest.mark.parametrize(
    ("stall", "pieces", "answer"),
    [
        pytest.param("trickle", ("Dots",), "Dots.", id="content-forever"),  # progress all along: not idle
        pytest.param("silent", (), "", id="silent-with-a-long-first-token-option"),  # 30 s won over 1 s
    ],
)
async def test_the_models_options_set_its_deadlines(
    client: Client,
    openai: tuple[FakeOpenAI, str],
    alice: dict[str, str],
    stored: Stored,
    stall: Stall,
    pieces: tuple[str, ...],
    answer: str,
) -> None:
    fake, _ = openai
    fake.stalled(stall, *pieces, every=0.2)
    body = run_input(str(uuid.uuid4()), user_message("hello"), model="openai/run-bound")

    events, elapsed = await _timed_run(client, alice, body)

    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "run_timeout"
    assert answer_text(events).startswith(answer)
    assert 2 * DEADLINE <= elapsed < 2 * DEADLINE + SLACK
    await _assert_failed_cleanly(client, fake, alice, stored, body, "run_timeout")


async def test_stateless_chat_gets_the_deadline_code_too(
    client: Client, openai: tuple[FakeOpenAI, str], alice: dict[str, str]
) -> None:
    fake, _ = openai
    fake.stalled("keepalive", every=0.2)

    started = time.monotonic()
    response = await client.post(
        "/api/llm/chat", json={"modelId": "openai/gpt-4o", "content": "hi", "stream": False}, headers=alice
    )

    assert response.status_code == 502
    assert response.json()["code"] == "provider_timeout"
    assert time.monotonic() - started < DEADLINE + SLACK


@pytest.mark.parametrize(
    "options",
    [
        {"idleTimeoutSeconds": 0},
        {"runTimeoutSeconds": "soon"},
        {"firstTokenTimeoutSeconds": True},
        {"firstTokenTimeoutSeconds": 100_000},
    ],
)
async def test_deadline_options_must_be_seconds(
    client: Client, auth: Callable[..., dict[str, str]], options: dict[str, Any]
) -> None:
    response = await client.post(
        "/api/models",
        json={"name": "x", "provider": "openai", "modelId": "x", "type": "text", "options": options},
        headers=auth("root", role="admin"),
    )

    assert response.status_code == 422
    assert response.json()["code"] == "invalid_option"
    assert response.json()["field"] == f"options.{next(iter(options))}"


async def test_a_cancelled_run_on_a_silent_vendor_streams_no_empty_message(
    settings: Settings, openai: tuple[FakeOpenAI, str], auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    """Cancelled before the vendor said anything: ``RUN_FINISHED`` (cancelled) with no message around
    nothing — as a deadline ends the same silence — and no assistant row."""
    fake, base = openai
    fake.stalled("silent", every=0.2)
    alice = auth("alice")
    body = run_input(str(uuid.uuid4()), user_message("hello"), model="openai/gpt-4o")
    with serve_asgi(create_app(settings, environ={"OPENAI_API_KEY": OPENAI_KEY}), lifespan="on") as iris:
        async with httpx.AsyncClient(base_url=iris, timeout=30) as http:
            created = await http.post(
                "/api/models",
                json={
                    "name": "gpt-4o",
                    "provider": "openai",
                    "modelId": "gpt-4o",
                    "type": "vision",
                    "options": {"baseUrl": base + "/v1"},
                },
                headers=auth("root", role="admin"),
            )
            assert created.status_code == 201, created.text
            await offer(http, auth("root", role="admin"), "openai/gpt-4o")
            async with http.stream("POST", "/agent/runs", json=body, headers=alice) as response:
                assert response.status_code == 200
                seen = b""
                chunks = response.aiter_bytes()
                async for chunk in chunks:
                    seen += chunk
                    if b"RUN_STARTED" in seen:
                        break
                for _ in range(300):  # the vendor has the request (and answers 200, then nothing)
                    if fake.requests:
                        break
                    await asyncio.sleep(0.05)
                assert fake.requests, "the run never asked the vendor"
                cancelled = await http.post(f"/agent/runs/{body['runId']}/cancel", headers=alice)
                assert cancelled.status_code == 202
                seen += b"".join([chunk async for chunk in chunks])

    events = check_stream(seen)
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_FINISHED"]
    assert events[-1]["outcome"] == {"type": "cancelled"}
    run_row = await stored.run(body["runId"])
    assert run_row is not None
    assert run_row.status == "cancelled"
    assert [r.role for r in await stored.messages(body["threadId"])] == ["user"]
