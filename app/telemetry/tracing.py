"""Building the app's tracer provider from the ``OTEL_*`` settings, and instrumenting what it owns.

Only called when tracing is configured: with it off, nothing here is imported and no span exists.
The provider is the app's own, passed explicitly to every instrumentation (Litestar's HTTP
middleware, the vendor HTTP client, the database engine); it is not installed as OpenTelemetry's
global provider, so several apps in one process (tests, an embedding host) keep theirs apart and a
host's own global provider is left alone.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.instrumentation.sqlalchemy.engine import EngineTracer
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import Tracer
from sqlalchemy.ext.asyncio import AsyncEngine

from app.settings import OtelSettings

INSTRUMENTATION = "iris"
NO_METER = NoOpMeterProvider()
"""Instrumentations also record OpenTelemetry metrics; Iris's metrics are Prometheus, so theirs go nowhere."""


def sampler(otel: OtelSettings) -> Sampler:
    """``OTEL_TRACES_SAMPLER`` (and its ratio) as the SDK's sampler."""
    ratio = 1.0 if otel.sampler_arg is None else otel.sampler_arg
    root: Sampler = {
        "always_on": ALWAYS_ON,
        "always_off": ALWAYS_OFF,
        "traceidratio": TraceIdRatioBased(ratio),
    }[otel.sampler.removeprefix("parentbased_")]
    return ParentBased(root) if otel.sampler.startswith("parentbased_") else root


def key_values(value: str | None) -> dict[str, str]:
    """``key=value,…`` (the OTLP headers and resource attribute format), values percent-decoded."""
    from urllib.parse import unquote

    pairs: dict[str, str] = {}
    for item in (value or "").split(","):
        key, sep, val = item.partition("=")
        if sep and key.strip():
            pairs[key.strip()] = unquote(val.strip())
    return pairs


def tracer_provider(otel: OtelSettings, exporter: SpanExporter | None = None) -> TracerProvider:
    """The provider: resource, sampler and exporter from the settings. A given ``exporter`` (tests)
    is flushed span by span; the real ones export in batches from a thread of their own."""
    resource = Resource.create({**key_values(otel.resource_attributes), "service.name": otel.service_name})
    provider = TracerProvider(resource=resource, sampler=sampler(otel))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif otel.exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    else:
        provider.add_span_processor(BatchSpanProcessor(otlp_exporter(otel)))
    return provider


def otlp_exporter(otel: OtelSettings) -> SpanExporter:
    """OTLP over HTTP with protobuf bodies, configured from the settings rather than the environment."""
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    compression = {"gzip": Compression.Gzip, "deflate": Compression.Deflate}.get(
        (otel.compression or "").lower(), Compression.NoCompression
    )
    return OTLPSpanExporter(
        endpoint=otel.traces_url,
        headers=key_values(otel.headers),
        timeout=otel.timeout_ms / 1000,
        compression=compression,
    )


def instrument_http_client(client: Any, provider: TracerProvider) -> None:
    """Vendor requests become client spans, and carry the W3C ``traceparent`` of the current span."""
    HTTPXClientInstrumentor.instrument_client(client, tracer_provider=provider, meter_provider=NO_METER)


def instrument_engine(engine: AsyncEngine, provider: TracerProvider) -> None:
    """Every statement becomes a client span under whatever span is current when it runs. SQLite
    statements run inline in the calling task (app/persistence/sqlite.py) and PostgreSQL ones in
    SQLAlchemy's greenlet, which shares the task's context: either way the run's span is their parent."""
    tracer = provider.get_tracer("opentelemetry.instrumentation.sqlalchemy")
    usage = NO_METER.get_meter(INSTRUMENTATION).create_up_down_counter("db.client.connections.usage")
    EngineTracer(tracer, engine.sync_engine, usage)  # type: ignore[no-untyped-call]


def iris_tracer(provider: TracerProvider) -> Tracer:
    return provider.get_tracer(INSTRUMENTATION)
