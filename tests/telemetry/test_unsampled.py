"""What an unsampled request costs: the sampler is asked once per request, before any attribute is
built, and nothing below it makes a span or builds span attributes (the vendor request included,
which still carries the trace context, flagged not sampled); an upstream ``traceparent`` is honoured
by the request span."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from opentelemetry.context import Context
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes

from iris.app.asgi import create_app
from iris.app.settings import Settings
from iris.app.settings.otel import OtelSettings
from iris.app.telemetry import ChatTelemetry, RunTelemetry, ToolTelemetry
from tests.support.fake_openai import FakeOpenAI
from tests.support.runs import of_type, run, run_input, user_message
from tests.telemetry.conftest import with_openai_model


class DroppingSampler(Sampler):
    """Samples nothing, and remembers what it was asked about: each span's name and attributes."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        self.asked.append((name, dict(attributes or {})))
        return SamplingResult(Decision.DROP)

    def get_description(self) -> str:
        return "DroppingSampler"


def _never(*_args: object) -> dict[str, Any]:
    raise AssertionError("span attributes built for a span that is not recorded")


def dropping_everything(monkeypatch: pytest.MonkeyPatch) -> DroppingSampler:
    """The apps built from here on sample nothing, and fail a test that builds a span attribute."""
    sampler = DroppingSampler()

    def dropping(_otel: OtelSettings) -> Sampler:
        return sampler

    monkeypatch.setattr("iris.app.telemetry.tracing.sampler", dropping)
    for operation in (RunTelemetry, ChatTelemetry, ToolTelemetry):
        monkeypatch.setattr(operation, "_attributes", _never)
    monkeypatch.setattr("iris.app.telemetry.http_client.full_url", _never)  # the vendor span's url.full
    return sampler


async def test_an_unsampled_run_asks_the_sampler_once_and_builds_no_span_attributes(
    settings: Settings, alice: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sampler = dropping_everything(monkeypatch)
    exporter = InMemorySpanExporter()
    app = create_app(settings, environ={}, span_exporter=exporter)
    async with AsyncTestClient(app=app) as client:
        sampler.asked.clear()
        events = await run(
            client, alice, run_input(str(uuid.uuid4()), user_message("use tool current_time {}"))
        )
    assert of_type(events, "RUN_FINISHED")
    assert of_type(events, "TOOL_CALL_RESULT")  # the run did call its tool, under no span
    assert sampler.asked == [("POST", {})]  # the request's span, before routing and without attributes
    assert exporter.get_finished_spans() == ()
    (started,) = of_type(events, "RUN_STARTED")
    assert len(started["metadata"]["iris/traceId"]) == 32  # the logs still get the request's trace id


async def test_an_unsampled_vendor_request_carries_the_trace_context_and_records_nothing(
    settings: Settings,
    openai: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
    alice: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sampler = dropping_everything(monkeypatch)
    exporter = InMemorySpanExporter()
    fake, _ = openai
    fake.text("Hello ", "there.", usage=(21, 7))
    async with with_openai_model(settings, openai, auth, span_exporter=exporter) as client:
        sampler.asked.clear()
        events = await run(
            client, alice, run_input(str(uuid.uuid4()), user_message("hi"), model="openai/gpt-4o")
        )
    assert of_type(events, "RUN_FINISHED")
    assert sampler.asked == [("POST", {})]  # not asked about the vendor request: no span was started
    assert exporter.get_finished_spans() == ()
    (request,) = fake.requests
    version, trace_id, _span_id, flags = request.headers["traceparent"].split("-")
    assert version == "00"
    assert not int(flags, 16) & 1  # the vendor learns the trace was not sampled (flag 01 clear)
    (started,) = of_type(events, "RUN_STARTED")
    assert trace_id == started["metadata"]["iris/traceId"]


async def test_the_request_span_continues_an_upstream_trace(
    settings: Settings, alice: dict[str, str]
) -> None:
    exporter = InMemorySpanExporter()
    trace_id, parent_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    headers = {**alice, "traceparent": f"00-{trace_id}-{parent_id}-01"}
    async with AsyncTestClient(app=create_app(settings, environ={}, span_exporter=exporter)) as client:
        answer = await client.get("/api/agents", headers=headers)
    assert answer.status_code == 200, answer.text
    (request,) = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert request.name == "GET /api/agents"
    assert format(request.context.trace_id, "032x") == trace_id
    assert request.parent is not None
    assert request.parent.is_remote
    assert format(request.parent.span_id, "016x") == parent_id
    assert request.attributes is not None
    assert request.attributes["http.request.method"] == "GET"
    assert request.attributes["url.path"] == "/api/agents"
    assert request.attributes["http.response.status_code"] == 200
    assert request.attributes["http.route"] == "/api/agents"
