"""When a run's intake commits (iris.app.runs.engine.model_turn: ``INTAKE_COMMIT_SECONDS``): after the first
content has gone to the client when the vendor answers at once (on SQLite the commit runs on the loop, and
started with the request it held the first tokens back), and while the vendor thinks when it does not,
so a run is in the database, for other processes to follow, long before a slow vendor's first token."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

import iris.app.agui.sse as sse
import iris.app.runs.engine.model_turn as model_turn
import iris.app.runs.engine.streaming as streaming
from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer, offer_sync
from tests.support.agui import check_stream
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, run, run_input, user_message
from tests.support.waits import REQUEST_SECONDS, eventually

KEY = "sk-test-123"
Client = AsyncTestClient[Litestar]


@pytest.fixture
def openai() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key=KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


MODEL = {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "vision"}


def _options(vendor: str) -> dict[str, Any]:
    return {"baseUrl": vendor + "/v1", "firstTokenTimeoutSeconds": 3}


@pytest.fixture
async def vendor_client(
    settings: Settings, openai: tuple[FakeOpenAI, str], auth: Callable[..., dict[str, str]]
) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={"OPENAI_API_KEY": KEY})) as client:
        admin = auth("root", role="admin")
        created = await client.post(
            "/api/models", json={**MODEL, "options": _options(openai[1])}, headers=admin
        )
        assert created.status_code == 201, created.text
        await offer(client, admin, "openai/gpt-4o")
        yield client


def _add_model(base: str, vendor: str, admin: dict[str, str]) -> None:
    """The fake's model on an Iris served on a real socket (AsyncTestClient runs a request to its end
    before the test goes on, so nothing could be looked at while a run waits)."""
    created = httpx.post(f"{base}/api/models", json={**MODEL, "options": _options(vendor)}, headers=admin)
    assert created.status_code == 201, created.text
    offer_sync(base, admin, "openai/gpt-4o")


def _body(thread: str, text: str) -> dict[str, Any]:
    return run_input(thread, user_message(text), model="openai/gpt-4o")


async def test_a_vendor_answering_at_once_has_its_first_tokens_sent_before_the_commit(
    vendor_client: Client,
    openai: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
    stored: Stored,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []
    commit = streaming._commit

    async def committing(*args: Any) -> None:
        seen.append("commit")
        await commit(*args)

    class Framing(bytes):
        """The SSE frame format, noting each event's type as the response frames it."""

        def __mod__(self, frame: Any) -> bytes:
            seen.append(frame[1].split(b'"type":"', 1)[1].split(b'"', 1)[0].decode())
            framed: bytes = bytes(self) % frame
            return framed

    monkeypatch.setattr(streaming, "_commit", committing)
    monkeypatch.setattr(sse, "FRAME", Framing(sse.FRAME))
    # Only the first content starts the commit here, however slow this machine is to answer.
    monkeypatch.setattr(model_turn, "INTAKE_COMMIT_SECONDS", 30.0)
    openai[0].text("Hello", " there", "!")
    body = _body(str(uuid.uuid4()), "hi")

    # An admin's intake counts no quota, so it has written nothing before the hand-over; one that has
    # holds SQLite's write turn and commits at the hand-over (docs/adr/0001-sqlite-write-turn.md).
    events = await run(vendor_client, auth("root", role="admin"), body)

    assert answer_text(events) == "Hello there!"
    assert seen.index("TEXT_MESSAGE_CONTENT") < seen.index("commit")
    assert seen.count("commit") == 1
    stored_run = await stored.run(body["runId"])
    assert stored_run is not None
    assert stored_run.status == "succeeded"


async def test_a_run_is_stored_while_a_slow_vendor_has_not_answered(
    settings: Settings,
    openai: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
    stored: Stored,
) -> None:
    openai[0].stalled("no_headers")  # never answers: the first-token deadline (3 s) ends the run
    body = _body(str(uuid.uuid4()), "hi")
    with serve_asgi(create_app(settings, environ={"OPENAI_API_KEY": KEY}), lifespan="on") as base:
        _add_model(base, openai[1], auth("root", role="admin"))
        async with (
            httpx.AsyncClient(base_url=base, timeout=REQUEST_SECONDS) as http,
            http.stream("POST", "/agent/runs", json=body, headers=auth("alice")) as started,
        ):
            assert started.status_code == 200

            async def stored_while_waiting() -> bool:
                found = await stored.run(body["runId"])
                return found is not None and found.status == "running"

            # long before the deadline, and the vendor has not said a word
            await eventually(stored_while_waiting, within=2.0, what="the running run in the database")
            events = check_stream(await started.aread())
    assert events[-1]["code"] == "provider_timeout"
