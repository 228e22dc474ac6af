"""W3C trace context reaches MCP servers: a real server built with the SDK (stdio subprocess and
Streamable HTTP on a loopback port) answers with the trace context its call arrived with, in
``params._meta`` and, over HTTP, as headers; it is the run's trace, the ``execute_tool`` span's when
sampled, and flagged not sampled otherwise."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, Sampler

from iris.app.asgi import create_app
from iris.app.settings import Settings
from iris.app.settings.otel import OtelSettings
from tests.support.mcp_servers import http_server, stdio_entry
from tests.support.run_fixtures import Stored
from tests.support.runs import of_type, run, run_input, user_message

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["sqlite"])]
Client = AsyncTestClient[Litestar]
CONNECT = 60.0


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server_entry(transport: str, marks: Path) -> Iterator[dict[str, Any]]:
    """A ``POST /api/mcp-servers`` body for the test server named ``traced``."""
    if transport == "stdio":
        yield {**stdio_entry("traced", marks), "connectTimeoutSeconds": CONNECT}
        return
    with http_server(marks) as url:
        yield {"name": "traced", "transport": "http", "url": url, "connectTimeoutSeconds": CONNECT}


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


async def client_with_server(
    settings: Settings,
    exporter: InMemorySpanExporter,
    entry: dict[str, Any],
    auth: Callable[..., dict[str, str]],
    stored: Stored,
) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={}, span_exporter=exporter)) as client:
        added = await client.post("/api/mcp-servers", json=entry, headers=auth("root", role="admin"))
        assert added.status_code == 201, added.text
        await stored.set_agent_tools(["traced__trace_context"])
        exporter.clear()
        yield client


@pytest.fixture
async def traced(
    settings: Settings,
    exporter: InMemorySpanExporter,
    server_entry: dict[str, Any],
    auth: Callable[..., dict[str, str]],
    stored: Stored,
) -> AsyncIterator[Client]:
    async for client in client_with_server(settings, exporter, server_entry, auth, stored):
        yield client


async def received(client: Client, alice: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the server says one call arrived with, and the run's ``RUN_STARTED`` metadata."""
    body = run_input(str(uuid.uuid4()), user_message("use tool traced__trace_context {}"))
    events = await run(client, alice, body)
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    output = result["metadata"]["iris/toolAgentOutput"]
    assert output["status"] == "succeeded", output
    (started,) = of_type(events, "RUN_STARTED")
    answer: dict[str, Any] = json.loads(output["content"][0]["text"])
    return answer, started.get("metadata") or {}


async def test_a_tool_call_carries_its_execute_tool_span_to_the_server(
    traced: Client, exporter: InMemorySpanExporter, alice: dict[str, str], transport: str
) -> None:
    answer, metadata = await received(traced, alice)
    trace_id = metadata["iris/traceId"]
    (tool,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool traced__trace_context"]
    traceparent = answer["meta"]["traceparent"]
    version, sent_trace, sent_parent, flags = traceparent.split("-")
    assert version == "00"
    assert sent_trace == trace_id == format(tool.context.trace_id, "032x")
    assert sent_parent == format(tool.context.span_id, "016x")  # the server's parent is the tool call
    assert int(flags, 16) & 1
    if transport == "http":
        assert answer["headers"]["traceparent"] == traceparent
    else:
        assert answer["headers"]["traceparent"] is None  # stdio has no headers: _meta is the carrier


async def test_an_unsampled_call_still_tells_the_server_its_trace(
    settings: Settings,
    exporter: InMemorySpanExporter,
    server_entry: dict[str, Any],
    auth: Callable[..., dict[str, str]],
    stored: Stored,
    alice: dict[str, str],
    transport: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(_otel: OtelSettings) -> Sampler:
        return ALWAYS_OFF

    monkeypatch.setattr("iris.app.telemetry.tracing.sampler", never)
    async for client in client_with_server(settings, exporter, server_entry, auth, stored):
        answer, metadata = await received(client, alice)
    assert exporter.get_finished_spans() == ()
    _, sent_trace, _, flags = answer["meta"]["traceparent"].split("-")
    assert sent_trace == metadata["iris/traceId"]
    assert not int(flags, 16) & 1  # not sampled: the server need not record it either
    if transport == "http":
        assert answer["headers"]["traceparent"] == answer["meta"]["traceparent"]


async def test_no_trace_context_when_tracing_is_off(
    settings: Settings,
    server_entry: dict[str, Any],
    auth: Callable[..., dict[str, str]],
    stored: Stored,
    alice: dict[str, str],
) -> None:
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        added = await client.post("/api/mcp-servers", json=server_entry, headers=auth("root", role="admin"))
        assert added.status_code == 201, added.text
        await stored.set_agent_tools(["traced__trace_context"])
        answer, metadata = await received(client, alice)
    assert "iris/traceId" not in metadata
    assert answer == {
        "meta": {"traceparent": None, "tracestate": None},
        "headers": {"traceparent": None, "tracestate": None},
    }


async def test_the_trace_context_does_not_depend_on_the_global_propagator(
    traced: Client, exporter: InMemorySpanExporter, alice: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK also injects into ``_meta``, with the process's global propagator (``OTEL_PROPAGATORS``,
    or a host's choice); Iris sends W3C trace context to servers as it does to vendors, whatever that is."""
    monkeypatch.setattr("opentelemetry.propagate._HTTP_TEXT_FORMAT", CompositePropagator([]))
    answer, metadata = await received(traced, alice)
    assert answer["meta"]["traceparent"].split("-")[1] == metadata["iris/traceId"]
