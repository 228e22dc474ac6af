"""Telemetry of the HTTP surface: a request span per request, and Litestar's Prometheus middleware.

The request span is Iris's own ASGI middleware rather than Litestar's OpenTelemetry plugin (the contrib
ASGI instrumentation): that one parses the request's URL, headers and user agent into attributes,
builds duration-metric labels and wraps ``send`` for every request, before and whatever the sampler
decides, which cost an unsampled request about as much as the rest of the tracing. Here the sampler
decides first, on a span without attributes; only a recorded span gets them (the stable HTTP semantic
conventions' names). Spans are named by route (``GET /agent/runs/{runId}/events``), never by raw path;
probes and scrapes are not traced. HTTP metrics group paths by route, so ids never become labels.
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.enums import ScopeType
from litestar.middleware.base import DefineMiddleware
from litestar.plugins.prometheus import PrometheusConfig
from litestar.types import ASGIApp, HTTPScope, Message, Receive, Scope, Send
from opentelemetry import context, trace
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from iris.app.telemetry.core import Telemetry
from iris.app.telemetry.metrics import HTTP_PREFIX

UNTRACED = frozenset({"/metrics", "/healthz", "/readyz"})
HTTP_BUCKETS: list[str | float] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
"""Prometheus's default buckets, and longer ones: an event stream is open as long as its run."""
_W3C = TraceContextTextMapPropagator()
_CONTEXT_HEADERS = {b"traceparent": "traceparent", b"tracestate": "tracestate"}


def http_middleware(telemetry: Telemetry) -> list[DefineMiddleware]:
    """The request spans (when tracing is on), then Litestar's Prometheus middleware (``iris_http_*``,
    when metrics are on)."""
    middleware = []
    if telemetry.provider is not None:
        tracer = telemetry.provider.get_tracer("iris.http")
        middleware.append(DefineMiddleware(RequestSpans, tracer=tracer))
    if telemetry.metrics is not None:
        config = PrometheusConfig(app_name="iris", prefix=HTTP_PREFIX, group_path=True, buckets=HTTP_BUCKETS)
        middleware.append(config.middleware)
    return middleware


class RequestSpans:
    """One SERVER span per HTTP request, current while the app answers it (the run's spans are its
    children). An unsampled request still has its span current, a non-recording one: it carries the
    trace id (logs, ``RUN_STARTED``) and tells every span below not to record either."""

    def __init__(self, app: ASGIApp, tracer: Tracer) -> None:
        self.app = app
        self.tracer = tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope["path"] in UNTRACED:
            await self.app(scope, receive, send)
            return
        carrier = {
            _CONTEXT_HEADERS[name]: value.decode("latin-1")
            for name, value in scope["headers"]
            if name in _CONTEXT_HEADERS
        }
        parent = _W3C.extract(carrier) if carrier else None
        span = self.tracer.start_span(scope["method"], context=parent, kind=SpanKind.SERVER)
        token = context.attach(trace.set_span_in_context(span, parent))
        try:
            if not span.is_recording():
                await self.app(scope, receive, send)
                return
            span.set_attributes(request_attributes(scope))

            async def send_noting_status(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status = message["status"]
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_attribute("error.type", str(status))
                        span.set_status(Status(StatusCode.ERROR))
                await send(message)

            try:
                await self.app(scope, receive, send_noting_status)
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
                raise
        finally:
            context.detach(token)
            span.end()


def request_attributes(scope: HTTPScope) -> dict[str, str | int]:
    """A recorded request span's attributes (stable HTTP semantic conventions); the query string and
    headers are left out, as the conventions advise for what may hold secrets."""
    attributes: dict[str, str | int] = {
        "http.request.method": scope["method"],
        "url.scheme": scope.get("scheme", "http"),
        "url.path": scope["path"],
        "network.protocol.version": scope.get("http_version", "1.1"),
    }
    server, client = scope.get("server"), scope.get("client")
    if server:
        attributes["server.address"], attributes["server.port"] = server[0], server[1] or 0
    if client:
        attributes["client.address"], attributes["client.port"] = client[0], client[1]
    for name, value in scope["headers"]:
        if name == b"user-agent":
            attributes["user_agent.original"] = value.decode("latin-1")
    return attributes


def name_request_span(request: Request[Any, Any, Any]) -> None:
    """Name the request's span by its route, and record the route (``http.route``)."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    route = request.scope.get("path_template")
    if route:
        span.update_name(f"{request.method} {route}")
        span.set_attribute("http.route", route)
