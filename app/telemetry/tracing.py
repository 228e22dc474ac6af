"""Building the app's tracer provider from the ``OTEL_*`` settings, and instrumenting what it owns.

Only called when tracing is configured: with it off, nothing here is imported and no span exists.
The provider is the app's own, passed explicitly to every instrumentation (the request-span
middleware, the vendor HTTP client, the database engine); it is not installed as OpenTelemetry's
global provider, so several apps in one process (tests, an embedding host) keep theirs apart and a
host's own global provider is left alone. What is registered on an app's objects is removed with it
(:func:`instrument_database` returns the undo).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import httpx
from advanced_alchemy.config.asyncio import SQLAlchemyAsyncConfig
from opentelemetry import trace
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
from opentelemetry.trace import SpanKind, Status, StatusCode
from sqlalchemy import Connection, event
from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlalchemy.orm import Session

from iris.app.settings.otel import OtelSettings
from iris.app.telemetry.http_client import trace_client

BEFORE, AFTER = "before_cursor_execute", "after_cursor_execute"
NO_METER = NoOpMeterProvider()
"""The OTLP exporter also records OpenTelemetry metrics; Iris's are Prometheus, so those go nowhere."""


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
        meter_provider=NO_METER,
    )


def instrument_http_client(client: httpx.AsyncClient, provider: TracerProvider) -> None:
    """Vendor requests become client spans, and carry the W3C ``traceparent`` of the current span
    (app/telemetry/http_client.py). The client is the app's own and closed with it."""
    trace_client(client, provider.get_tracer("iris.http_client"))


def instrument_database(alchemy: SQLAlchemyAsyncConfig, provider: TracerProvider) -> Callable[[], None]:
    """Each statement run inside a recorded span becomes its child (kind CLIENT, the database
    conventions' ``db.system.name``, ``db.namespace``, ``db.operation.name``, ``db.query.text``).

    SQLite statements run inline in the calling task (app/persistence/sqlite.py) and PostgreSQL ones in
    SQLAlchemy's greenlet, which shares the task's context: either way the current span is the run's.
    The statement listeners go on a session's connection only when the session begins inside a
    recorded span (the app's session maker's ``after_begin``), never on the engine: a listener on the
    engine puts every statement of every run on SQLAlchemy's event path (four listener collections
    walked per statement), most of what an unsampled run paid for tracing (ADR 0063). So an
    unsampled run's sessions cost one context lookup each, and its statements nothing. Statements run
    on a connection outside a session (the schema check, migrations) make no spans. A failure ends
    its statement's span from ``handle_error``, which SQLAlchemy takes only engine-wide (it is called
    on errors only). This is not the contrib SQLAlchemy instrumentation, which builds every
    statement's attributes and span whether or not anything records them.

    Returns what removes the listeners: the app calls it on shutdown, so a session maker or engine
    that outlives the app does not keep tracing into a provider that has shut down (listeners on a
    connection go with it when its session ends).
    """
    tracer = provider.get_tracer("iris.db")
    engine = alchemy.get_engine()
    url = engine.url
    system = "postgresql" if url.get_backend_name().startswith("postgres") else url.get_backend_name()
    base: dict[str, str | int] = {"db.system.name": system, "db.namespace": url.database or ""}
    if url.host:
        base["server.address"] = url.host
    if url.port:
        base["server.port"] = url.port

    def before(_conn: Any, _cursor: Any, statement: str, _params: Any, context: Any, _many: bool) -> None:
        if not trace.get_current_span().is_recording():
            return
        operation = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
        context._iris_span = tracer.start_span(
            f"{operation} {base['db.namespace']}".strip() if system != "sqlite" else operation,
            kind=SpanKind.CLIENT,
            attributes={**base, "db.operation.name": operation, "db.query.text": statement},
        )

    def after(_conn: Any, _cursor: Any, _statement: str, _params: Any, context: Any, _many: bool) -> None:
        span = getattr(context, "_iris_span", None)
        if span is not None:
            span.end()

    def failed(exception_context: Any) -> None:
        span = getattr(exception_context.execution_context, "_iris_span", None)
        if span is not None:
            span.set_status(Status(StatusCode.ERROR, type(exception_context.original_exception).__name__))
            span.end()

    def begun(_session: Session, _transaction: Any, connection: Connection) -> None:
        if not trace.get_current_span().is_recording():
            return
        for name, listener in ((BEFORE, before), (AFTER, after)):
            if not event.contains(connection, name, listener):
                event.listen(connection, name, listener)

    maker = alchemy.create_session_maker()
    if not isinstance(maker, async_sessionmaker):  # advanced-alchemy's routing maker: not used by Iris
        raise TypeError(f"cannot trace statements of sessions made by {type(maker).__name__}")
    sessions = maker.kw["sync_session_class"]  # this app's own sync maker (advanced-alchemy's)
    registered: list[tuple[Any, str, Callable[..., None]]] = [
        (sessions, "after_begin", begun),
        (engine.sync_engine, "handle_error", failed),
    ]
    for target, name, listener in registered:
        event.listen(target, name, listener)

    def remove() -> None:
        for target, name, listener in registered:
            if event.contains(target, name, listener):
                event.remove(target, name, listener)

    return remove
