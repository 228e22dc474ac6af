"""Retries and fallbacks against OpenAI's loopback fake: a 429 tried again, a 503 answered by the model's
fallback, a failure after the first chunk that never switches, a text-only fallback skipped for an
image, one that cannot hear skipped for audio, a fallback the agent does not offer skipped,
``Retry-After`` beyond the first-token deadline, cool-downs shared by two app instances on one
database, and the stateless endpoint doing the same."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.persistence.db import create_engine
from iris.app.persistence.models import ModelCooldown, Run
from iris.app.persistence.repositories import CooldownRepository
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.agui import check_stream
from tests.support.documents import wav_bytes
from tests.support.fake_openai import FakeOpenAI
from tests.support.fallbacks import GPT, OPENAI_KEY, finished, iris, started_on
from tests.support.http_server import serve_asgi
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, run, run_input, upload, user_message


@pytest.fixture
def openai() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key=OPENAI_KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.fixture
def admin(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


def cooldowns(scrape: Any) -> float:
    """``iris_model_cooldowns_total`` of ``openai/gpt-4o`` in a scrape (the registry is the process's)."""
    assert scrape.status_code == 200, scrape.text
    return sum(
        sample.value
        for family in text_string_to_metric_families(scrape.text)
        for sample in family.samples
        if sample.name == "iris_model_cooldowns_total" and sample.labels.get("model") == GPT
    )


async def test_a_rate_limit_is_retried_on_the_same_model(
    settings: Settings, openai: tuple[FakeOpenAI, str], admin: dict[str, str], alice: dict[str, str]
) -> None:
    fake, base = openai
    async with iris(settings, base, admin, fallbacks=["local/vision"]) as client:
        fake.rate_limited(retry_after="0")
        fake.text("Hello ", "again.")
        events = await run(client, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
    assert answer_text(events) == "Hello again."
    assert len(fake.requests) == 2
    assert started_on(events) == GPT
    metadata = finished(events)
    assert metadata["iris/model"] == GPT
    assert metadata["iris/attempts"] == [{"model": GPT, "code": "provider_rate_limit"}]
    assert len(of_type(events, "TEXT_MESSAGE_START")) == 1  # the failed request left nothing behind


async def test_a_model_that_keeps_failing_is_answered_by_its_fallback(
    settings: Settings,
    openai: tuple[FakeOpenAI, str],
    admin: dict[str, str],
    alice: dict[str, str],
    database_url: str,
) -> None:
    fake, base = openai
    thread = str(uuid.uuid4())
    async with iris(settings, base, admin, fallbacks=["local/vision"]) as client:
        fake.error(503, "The engine is currently overloaded.", type_="server_error")
        fake.error(503, "The engine is currently overloaded.", type_="server_error")
        events = await run(client, alice, run_input(thread, user_message("hi"), model=GPT))
    assert len(fake.requests) == 2  # both tries, then the fallback
    assert not of_type(events, "RUN_ERROR")
    assert answer_text(events)
    metadata = finished(events)
    assert metadata["iris/model"] == "local/vision"
    assert metadata["iris/attempts"] == [
        {"model": GPT, "code": "provider_unavailable"},
        {"model": GPT, "code": "provider_unavailable"},
    ]
    (end,) = of_type(events, "TEXT_MESSAGE_END")
    worker = end["metadata"]["iris/workerAgentOutput"]
    assert (worker["provider"], worker["model"]) == ("local", "vision")
    (usage,) = of_type(events, "RUN_FINISHED")[0]["usage"]
    assert usage["model"] == "vision"  # billed to the model that answered
    stored = Stored(database_url)
    session_pk = await stored.session_pk(thread)
    async with stored._session() as db:
        row = (await db.scalars(select(Run).where(Run.session_id == session_pk))).one()
    assert row.status == "succeeded"
    assert row.usage is not None
    assert [entry["model"] for entry in row.usage["entries"]] == ["vision"]


async def test_an_error_after_the_first_chunk_never_switches(
    settings: Settings, openai: tuple[FakeOpenAI, str], admin: dict[str, str], alice: dict[str, str]
) -> None:
    fake, base = openai
    async with iris(settings, base, admin, fallbacks=["local/vision"]) as client:
        fake.broken("Half an ")
        events = await run(client, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
    assert len(fake.requests) == 1  # neither retried nor moved on: content had reached the client
    (error,) = of_type(events, "RUN_ERROR")
    assert error["code"] == "provider_unavailable"
    assert error["metadata"]["iris/model"] == GPT
    assert answer_text(events) == "Half an "
    assert not of_type(events, "RUN_FINISHED")


async def test_a_text_only_fallback_is_skipped_for_an_image_message(
    settings: Settings, openai: tuple[FakeOpenAI, str], admin: dict[str, str], alice: dict[str, str]
) -> None:
    fake, base = openai
    thread = str(uuid.uuid4())
    async with iris(
        settings, base, admin, fallbacks=["local/text", "local/vision"], retryAttempts=1
    ) as client:
        image = await upload(client, alice, thread)
        fake.server_error()
        message = user_message("what is this?", image["parts"]["agui"])
        events = await run(client, alice, run_input(thread, message, model=GPT))
        assert finished(events)["iris/model"] == "local/vision"
        assert "red" in answer_text(events).lower()  # the image reached the fallback

        fake.server_error()  # a text message: the text model suits it, and comes first
        events = await run(client, alice, run_input(str(uuid.uuid4()), user_message("just text"), model=GPT))
        assert finished(events)["iris/model"] == "local/text"


async def test_a_fallback_that_cannot_hear_is_skipped_for_an_audio_message(
    settings: Settings, openai: tuple[FakeOpenAI, str], admin: dict[str, str], alice: dict[str, str]
) -> None:
    fake, base = openai
    thread = str(uuid.uuid4())
    async with iris(
        settings,
        base,
        admin,
        fallbacks=["local/vision", "local/multimodal"],
        retryAttempts=1,
        type="multimodal",
        options={"audio": True},
    ) as client:
        await offer(client, admin, "local/multimodal")
        clip = await upload(client, alice, thread, data=wav_bytes(1.0), name="note.wav")
        fake.server_error()
        events = await run(
            client, alice, run_input(thread, user_message("listen", clip["parts"]["agui"]), model=GPT)
        )
    assert finished(events)["iris/model"] == "local/multimodal"  # local/vision, which cannot hear, skipped
    assert "Audio 1 (note.wav): WAV, 1.00 seconds" in answer_text(events)


async def test_a_fallback_the_agent_does_not_offer_is_skipped(
    settings: Settings, openai: tuple[FakeOpenAI, str], admin: dict[str, str], alice: dict[str, str]
) -> None:
    fake, base = openai
    async with iris(settings, base, admin, fallbacks=[], retryAttempts=1) as client:
        other = {"name": "Mini", "provider": "openai", "modelId": "gpt-4o-mini", "type": "vision"}
        created = await client.post(
            "/api/models", json={**other, "options": {"baseUrl": base + "/v1"}}, headers=admin
        )
        assert created.status_code == 201, created.text
        gpt = next(
            m for m in (await client.get("/api/models", headers=admin)).json()["models"] if m["ref"] == GPT
        )
        patched = await client.patch(
            f"/api/models/{gpt['id']}", json={"fallbacks": ["openai/gpt-4o-mini"]}, headers=admin
        )
        assert patched.status_code == 200, patched.text
        fake.server_error()
        events = await run(client, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
    assert len(fake.requests) == 1  # the un-offered model was never asked
    (error,) = of_type(events, "RUN_ERROR")
    assert error["code"] == "provider_unavailable"
    assert error["metadata"] == {
        "iris/model": GPT,
        "iris/attempts": [{"model": GPT, "code": "provider_unavailable"}],
    }


async def test_a_retry_after_beyond_the_first_token_deadline_moves_on_at_once(
    settings: Settings, openai: tuple[FakeOpenAI, str], admin: dict[str, str], alice: dict[str, str]
) -> None:
    fake, base = openai
    options = {"firstTokenTimeoutSeconds": 5}
    async with iris(settings, base, admin, fallbacks=["local/vision"], options=options) as client:
        fake.rate_limited(retry_after="30")
        events = await run(client, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
    assert len(fake.requests) == 1  # waiting 30 s would pass the 5 s deadline: no retry
    assert finished(events)["iris/model"] == "local/vision"


async def test_a_cool_down_is_shared_by_two_app_instances_on_one_database(
    settings: Settings,
    openai: tuple[FakeOpenAI, str],
    admin: dict[str, str],
    alice: dict[str, str],
    database_url: str,
) -> None:
    fake, base = openai
    cooling = msgspec.structs.replace(settings, cooldown_failures=2, cooldown_seconds=600)
    async with iris(cooling, base, admin, fallbacks=["local/vision"]) as first:
        before = cooldowns(await first.get("/metrics", headers=admin))
        fake.server_error()
        fake.server_error()
        events = await run(first, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
        assert finished(events)["iris/model"] == "local/vision"
        assert cooldowns(await first.get("/metrics", headers=admin)) == before + 1
    stored = Stored(database_url)
    async with stored._session() as db:
        (row,) = (await db.scalars(select(ModelCooldown))).all()
    assert row.model_ref == GPT
    assert row.cooled_until is not None

    async with iris(cooling, base, admin, fallbacks=["local/vision"], create=False) as second:
        events = await run(second, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
    assert len(fake.requests) == 2  # the second process never asked the cooled-down model
    assert started_on(events) == "local/vision"
    (started,) = of_type(events, "RUN_STARTED")
    assert started["metadata"]["iris/attempts"] == [{"model": GPT, "code": "model_cooling_down"}]
    metadata = finished(events)
    assert metadata["iris/model"] == "local/vision"
    assert metadata["iris/attempts"] == [{"model": GPT, "code": "model_cooling_down"}]


async def test_the_stateless_endpoint_falls_back_too(
    settings: Settings, openai: tuple[FakeOpenAI, str], admin: dict[str, str], alice: dict[str, str]
) -> None:
    fake, base = openai
    async with iris(settings, base, admin, fallbacks=["local/vision"], retryAttempts=1) as client:
        fake.server_error()
        response = await client.post(
            "/api/llm/chat", json={"modelId": GPT, "content": "hello"}, headers=alice
        )
        assert response.status_code == 200, response.text
        events = check_stream(response.content)
        assert finished(events)["iris/model"] == "local/vision"
        assert answer_text(events)

        fake.server_error()
        response = await client.post(
            "/api/llm/chat", json={"modelId": GPT, "content": "hello", "stream": False}, headers=alice
        )
        assert response.status_code == 200, response.text
        assert response.json()["content"]
    assert len(fake.requests) == 2


async def test_a_cooled_down_fallback_is_skipped_for_the_next_one(
    settings: Settings,
    openai: tuple[FakeOpenAI, str],
    admin: dict[str, str],
    alice: dict[str, str],
    database_url: str,
) -> None:
    fake, base = openai
    engine = create_engine(database_url)
    try:
        async with AsyncSession(engine) as db:  # another process saw local/text fail
            repo = CooldownRepository(session=db)
            assert await repo.record_failure(
                "local/text", time.time(), code="provider_unavailable", window=600, threshold=1
            )
            await db.commit()
    finally:
        await engine.dispose()
    fallbacks = ["local/text", "local/vision"]
    async with iris(settings, base, admin, fallbacks=fallbacks, retryAttempts=1) as client:
        fake.server_error()
        events = await run(client, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
    assert started_on(events) == GPT
    metadata = finished(events)
    assert metadata["iris/model"] == "local/vision"
    assert metadata["iris/attempts"] == [
        {"model": GPT, "code": "provider_unavailable"},
        {"model": "local/text", "code": "model_cooling_down"},
    ]
