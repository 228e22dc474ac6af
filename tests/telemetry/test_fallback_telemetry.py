"""A run that retries and then falls back, as traces and metrics show it: a ``chat {model}`` span per
request (failed ones with an error status) under the run's span, the retry and fallback as span events,
and the ``iris_model_*`` families counted by model and code."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from iris.app.settings import Settings
from tests.support.fake_openai import FakeOpenAI
from tests.support.metrics import scrape, value
from tests.support.runs import of_type, run, run_input, user_message
from tests.support.traces import named, one, parent_of
from tests.telemetry.conftest import with_openai_model

Client = AsyncTestClient[Litestar]
GPT = "openai/gpt-4o"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
async def falling_back(
    settings: Settings,
    exporter: InMemorySpanExporter,
    openai: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
) -> AsyncIterator[Client]:
    """``openai/gpt-4o`` with two tries and ``local/vision`` as its fallback, traced."""
    admin = auth("root", role="admin")
    async with with_openai_model(settings, openai, auth, span_exporter=exporter) as client:
        listed = (await client.get("/api/models", headers=admin)).json()["models"]
        gpt = next(m for m in listed if m["ref"] == GPT)
        body = {"fallbacks": ["local/vision"], "retryAttempts": 2, "retryBackoffSeconds": 0}
        patched = await client.patch(f"/api/models/{gpt['id']}", json=body, headers=admin)
        assert patched.status_code == 200, patched.text
        exporter.clear()
        yield client


async def test_each_request_is_a_chat_span_and_the_fallback_answers_in_the_run_trace(
    falling_back: Client,
    exporter: InMemorySpanExporter,
    openai: tuple[FakeOpenAI, str],
    alice: dict[str, str],
) -> None:
    fake, _ = openai
    fake.rate_limited(retry_after="0")
    fake.server_error()
    events = await run(falling_back, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
    assert of_type(events, "RUN_FINISHED")
    spans = exporter.get_finished_spans()
    agent = one(spans, "invoke_agent default")
    failed = named(spans, "chat gpt-4o")
    answered = one(spans, "chat vision")
    assert len(failed) == 2
    for span in [*failed, answered]:
        assert parent_of(span) == agent.context.span_id
        assert span.context.trace_id == agent.context.trace_id
    assert [(s.attributes or {}).get("error.type") for s in failed] == [
        "provider_rate_limit",
        "provider_unavailable",
    ]
    assert all(not s.status.is_ok for s in failed)
    assert answered.status.is_ok
    assert (answered.attributes or {})["gen_ai.provider.name"] == "local"
    assert agent.status.is_ok
    names = [event.name for event in agent.events]
    assert names == ["iris.retry", "iris.fallback"]
    fallback = agent.events[1].attributes or {}
    assert fallback["iris.from_model"] == GPT
    assert fallback["iris.to_model"] == "local/vision"
    assert fallback["error.type"] == "provider_unavailable"


async def test_metric_families_count_retries_and_fallbacks(
    falling_back: Client,
    openai: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
    alice: dict[str, str],
) -> None:
    fake, _ = openai
    admin = auth("root", role="admin")
    before = await scrape(falling_back, admin)  # the registry is the process's: count what changes
    for _ in range(2):
        fake.rate_limited(retry_after="0")
        fake.server_error()
        events = await run(falling_back, alice, run_input(str(uuid.uuid4()), user_message("hi"), model=GPT))
        assert of_type(events, "RUN_FINISHED")
    after = await scrape(falling_back, admin)

    def added(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert added("iris_model_retries_total", model=GPT, code="provider_rate_limit") == 2
    assert (
        added(
            "iris_model_fallbacks_total", from_model=GPT, to_model="local/vision", code="provider_unavailable"
        )
        == 2
    )
    assert added("iris_model_cooldowns_total", model=GPT) == 1  # 4 failures: cooled at the 3rd
    assert added("iris_runs_finished_total", model=GPT, outcome="success") == 2
