"""Traces of real runs, caught by the SDK's in-memory exporter: span names, parents and GenAI attributes
of a run with a tool call, its database statements and vendor request as children, the trace context
the vendor receives, and a re-attached stream in the run's own trace."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from iris.app.asgi import create_app
from iris.app.settings import Settings
from iris.app.telemetry import build_telemetry, trace_headers
from iris.app.telemetry.http_client import full_url
from tests.support.fake_openai import FakeOpenAI
from tests.support.runs import of_type, run, run_input, user_message
from tests.support.traces import named, one, parent_of
from tests.telemetry.conftest import with_openai_model

Client = AsyncTestClient[Litestar]


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
async def traced(
    settings: Settings,
    exporter: InMemorySpanExporter,
    openai: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
) -> AsyncIterator[Client]:
    async with with_openai_model(settings, openai, auth, span_exporter=exporter) as client:
        exporter.clear()
        yield client


def trace_of(events: list[dict[str, Any]]) -> str:
    (started,) = of_type(events, "RUN_STARTED")
    trace_id: str = started["metadata"]["iris/traceId"]
    return trace_id


async def test_a_run_with_a_tool_call_is_one_trace_of_genai_spans(
    traced: Client, exporter: InMemorySpanExporter, alice: dict[str, str]
) -> None:
    thread = str(uuid.uuid4())
    events = await run(traced, alice, run_input(thread, user_message("use tool current_time {}")))
    assert of_type(events, "RUN_FINISHED")
    spans = exporter.get_finished_spans()

    request = one(spans, "POST /agent/runs")
    agent = one(spans, "invoke_agent default")
    turns = named(spans, "chat vision")
    tool = one(spans, "execute_tool current_time")
    assert request.kind == SpanKind.SERVER
    assert request.attributes is not None
    assert request.attributes["http.route"] == "/agent/runs"
    assert parent_of(agent) == request.context.span_id
    assert len(turns) == 2  # the call, then the answer to its result
    assert all(parent_of(t) == agent.context.span_id for t in turns)
    assert parent_of(tool) == agent.context.span_id
    assert turns[0].end_time is not None
    assert tool.start_time is not None
    assert turns[0].end_time <= tool.start_time  # the tool runs between the two turns
    assert {s.context.trace_id for s in (request, agent, tool, *turns)} == {request.context.trace_id}
    assert format(agent.context.trace_id, "032x") == trace_of(events)

    assert agent.attributes is not None
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "default"
    assert agent.attributes["gen_ai.conversation.id"] == thread
    assert agent.attributes["iris.run.outcome"] == "success"
    first = turns[0]
    assert first.kind == SpanKind.CLIENT
    assert first.attributes is not None
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == "local"
    assert first.attributes["gen_ai.request.model"] == "vision"
    assert first.attributes["gen_ai.response.model"] == "vision"
    assert first.attributes["gen_ai.conversation.id"] == thread
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert isinstance(first.attributes["gen_ai.usage.input_tokens"], int)
    assert isinstance(first.attributes["gen_ai.usage.output_tokens"], int)
    assert float(first.attributes["gen_ai.response.time_to_first_chunk"]) >= 0  # type: ignore[arg-type]
    assert tool.kind == SpanKind.INTERNAL
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.name"] == "current_time"
    assert tool.attributes["gen_ai.tool.call.id"] == of_type(events, "TOOL_CALL_START")[0]["toolCallId"]
    assert tool.attributes["iris.tool.outcome"] == "succeeded"
    for span in (agent, tool, *turns):  # no content unless IRIS_TRACE_CONTENT says so
        assert span.attributes is not None
        assert not any(key in span.attributes for key in _CONTENT), span.name

    # The database statements of the run are its children: SQLite runs them inline in the run's task,
    # PostgreSQL in SQLAlchemy's greenlet, which shares the task's context. The run's closing write is
    # INSERTs on SQLite and one data-modifying WITH statement on PostgreSQL.
    inside = {agent.context.span_id, tool.context.span_id, *(t.context.span_id for t in turns)}
    statements = [s for s in spans if s.attributes and "db.system.name" in s.attributes]
    run_statements = [s for s in statements if parent_of(s) in inside]
    writes = [s for s in run_statements if str(s.name).split()[0] in ("INSERT", "WITH")]
    assert writes, [s.name for s in statements]
    assert all(s.context.trace_id == agent.context.trace_id for s in run_statements)


_CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments")


async def test_the_vendor_request_is_a_child_span_and_carries_its_trace_context(
    traced: Client,
    exporter: InMemorySpanExporter,
    openai: tuple[FakeOpenAI, str],
    alice: dict[str, str],
) -> None:
    fake, _ = openai
    fake.text("Hello ", "there.", usage=(21, 7))
    events = await run(traced, alice, run_input(str(uuid.uuid4()), user_message("hi"), model="openai/gpt-4o"))
    assert of_type(events, "RUN_FINISHED")
    spans = exporter.get_finished_spans()
    chat = one(spans, "chat gpt-4o")
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 21
    assert chat.attributes["gen_ai.usage.output_tokens"] == 7
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    children = [s for s in spans if s.kind == SpanKind.CLIENT and parent_of(s) == chat.context.span_id]
    (vendor,) = [s for s in children if "db.system.name" not in (s.attributes or {})]  # the intake commit
    assert vendor.name == "POST"
    assert vendor.attributes is not None
    assert str(vendor.attributes["url.full"]).endswith("/chat/completions")
    assert vendor.attributes["http.request.method"] == "POST"
    assert vendor.attributes["server.address"] == "127.0.0.1"
    assert isinstance(vendor.attributes["server.port"], int)
    assert vendor.attributes["http.response.status_code"] == 200
    assert "error.type" not in vendor.attributes

    (request,) = fake.requests
    version, trace_id, span_id, flags = request.headers["traceparent"].split("-")
    assert version == "00"
    assert int(flags, 16) & 1
    assert trace_id == trace_of(events) == format(chat.context.trace_id, "032x")
    assert span_id == format(vendor.context.span_id, "016x")  # the vendor's parent is the HTTP span


async def test_a_vendor_failure_marks_the_turn_and_the_run(
    traced: Client, exporter: InMemorySpanExporter, openai: tuple[FakeOpenAI, str], alice: dict[str, str]
) -> None:
    fake, _ = openai
    fake.rate_limited()
    events = await run(traced, alice, run_input(str(uuid.uuid4()), user_message("hi"), model="openai/gpt-4o"))
    (error,) = of_type(events, "RUN_ERROR")
    spans = exporter.get_finished_spans()
    chat, agent = one(spans, "chat gpt-4o"), one(spans, "invoke_agent default")
    assert chat.attributes is not None
    assert agent.attributes is not None
    assert chat.attributes["error.type"] == error["code"] == "provider_rate_limit"
    vendor = [s for s in spans if s.name == "POST" and parent_of(s) == chat.context.span_id]
    assert vendor
    assert all(s.attributes is not None and s.attributes["error.type"] == "429" for s in vendor)
    assert all(s.attributes is not None and s.attributes["http.response.status_code"] == 429 for s in vendor)
    assert agent.attributes["error.type"] == "provider_rate_limit"
    assert not agent.status.is_ok
    assert not chat.status.is_ok


async def test_content_is_recorded_only_when_opted_in(
    settings: Settings, exporter: InMemorySpanExporter, alice: dict[str, str]
) -> None:
    app = create_app(
        msgspec.structs.replace(settings, trace_content=True), environ={}, span_exporter=exporter
    )
    async with AsyncTestClient(app=app) as client:
        await run(client, alice, run_input(str(uuid.uuid4()), user_message("use tool current_time {}")))
    spans = exporter.get_finished_spans()
    first = named(spans, "chat vision")[0]
    assert first.attributes is not None
    assert "use tool current_time" in str(first.attributes["gen_ai.input.messages"])
    assert '"tool_call"' in str(first.attributes["gen_ai.output.messages"])
    tool = one(spans, "execute_tool current_time")
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.call.arguments"] == "{}"


async def test_a_reattached_stream_joins_the_run_trace(
    traced: Client, exporter: InMemorySpanExporter, alice: dict[str, str]
) -> None:
    body = run_input(str(uuid.uuid4()), user_message("hello"))
    events = await run(traced, alice, body)
    again = await traced.get(f"/agent/runs/{body['runId']}/events", headers=alice)
    assert again.status_code == 200
    spans = exporter.get_finished_spans()
    agent = one(spans, "invoke_agent default")
    follow = one(spans, "follow_run")
    reattach = one(spans, "GET /agent/runs/{runId}/events")
    assert follow.context.trace_id == agent.context.trace_id
    assert parent_of(follow) == agent.context.span_id
    assert reattach.context.trace_id != agent.context.trace_id  # its own request trace, linked
    assert [link.context.span_id for link in follow.links] == [reattach.context.span_id]
    assert trace_of(events) == format(follow.context.trace_id, "032x")


async def test_no_spans_and_no_trace_ids_when_tracing_is_off(client: Client, alice: dict[str, str]) -> None:
    events = await run(client, alice, run_input(str(uuid.uuid4()), user_message("hello")))
    (started,) = of_type(events, "RUN_STARTED")
    assert "iris/traceId" not in (started.get("metadata") or {})
    assert client.app.state.telemetry.tracer is None


def test_a_vendor_span_url_keeps_no_credentials() -> None:
    url = httpx.URL("https://user:secret@vendor.example/v1beta/models/m:streamGenerateContent?alt=sse&key=k1")
    assert full_url(url) == (
        "https://vendor.example/v1beta/models/m:streamGenerateContent?alt=REDACTED&key=REDACTED"
    )
    assert full_url(httpx.URL("http://127.0.0.1:8080/v1/chat")) == "http://127.0.0.1:8080/v1/chat"


@pytest.mark.parametrize("engine_name", ["sqlite"])
def test_trace_headers_carry_the_current_span_for_calls_outside_the_vendor_client(
    settings: Settings, exporter: InMemorySpanExporter
) -> None:
    """The hook an MCP client calls: the W3C ``traceparent`` of its current span, nothing outside one."""
    assert trace_headers() == {}
    telemetry = build_telemetry(settings, span_exporter=exporter)
    assert telemetry.tracer is not None
    with telemetry.tracer.start_as_current_span("execute_tool lookup") as span:
        headers = trace_headers()
    context = span.get_span_context()
    version, trace_id, span_id, flags = headers["traceparent"].split("-")
    assert (version, trace_id, span_id) == ("00", f"{context.trace_id:032x}", f"{context.span_id:016x}")
    assert int(flags, 16) & 1  # sampled
    assert trace_headers() == {}
    telemetry.shutdown()


async def test_the_statement_listeners_leave_with_the_app(
    settings: Settings, exporter: InMemorySpanExporter, alice: dict[str, str]
) -> None:
    """None is on the engine (every statement of every run would pay SQLAlchemy's event path), and
    what is on the app's session maker leaves with the app: a maker or engine that outlives it is
    not left tracing into a provider that has shut down."""

    def listeners(app: Litestar) -> tuple[int, int]:
        dispatch = app.state.alchemy.get_engine().sync_engine.dispatch
        with app.state.alchemy.create_session_maker().kw["sync_session_class"]() as session:
            begin = len(list(session.dispatch.after_begin))  # the app's own sync session maker's
        return len(dispatch.before_cursor_execute) + len(dispatch.after_cursor_execute), begin

    untraced_cursor, untraced_begin = listeners(create_app(settings, environ={}))
    app = create_app(settings, environ={}, span_exporter=exporter)
    assert listeners(app) == (untraced_cursor, untraced_begin + 1)
    async with AsyncTestClient(app=app) as client:
        await run(client, alice, run_input(str(uuid.uuid4()), user_message("hello")))
        assert listeners(app) == (untraced_cursor, untraced_begin + 1)
    assert any(s.attributes and "db.system.name" in s.attributes for s in exporter.get_finished_spans())
    assert listeners(app) == (untraced_cursor, untraced_begin)
