"""Telemetry of the HTTP surface: Litestar's OpenTelemetry and Prometheus plugins, configured for Iris.

Request spans are named by route (``GET /agent/runs/{runId}/events``), never by raw path, and
receive/send sub-spans are off (an event stream would otherwise make one per event); probes and
scrapes are not traced. HTTP metrics group paths by route, so thread and run ids never become labels.
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.middleware.base import DefineMiddleware
from litestar.plugins import PluginProtocol
from litestar.plugins.opentelemetry import OpenTelemetryConfig, OpenTelemetryPlugin
from litestar.plugins.prometheus import PrometheusConfig
from opentelemetry import trace
from opentelemetry.metrics import NoOpMeterProvider

from app.telemetry.core import Telemetry
from app.telemetry.metrics import HTTP_PREFIX

UNTRACED = ["^/metrics$", "^/healthz$", "^/readyz$"]
HTTP_BUCKETS: list[str | float] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
"""Prometheus's default buckets, and longer ones: an event stream is open as long as its run."""


def http_plugins(telemetry: Telemetry) -> list[PluginProtocol]:
    """Litestar's OpenTelemetry plugin, with the app's own provider, when tracing is on."""
    if telemetry.provider is None:
        return []
    config = OpenTelemetryConfig(
        tracer_provider=telemetry.provider,
        meter_provider=NoOpMeterProvider(),
        exclude=UNTRACED,
        exclude_spans=["receive", "send"],
        scope_span_details_extractor=_unrouted_span,
    )
    return [OpenTelemetryPlugin(config)]


def http_middleware(telemetry: Telemetry) -> list[DefineMiddleware]:
    """Litestar's Prometheus middleware (``iris_http_*``), when metrics are on."""
    if telemetry.metrics is None:
        return []
    config = PrometheusConfig(app_name="iris", prefix=HTTP_PREFIX, group_path=True, buckets=HTTP_BUCKETS)
    return [config.middleware]


def _unrouted_span(scope: Any) -> tuple[str, dict[str, Any]]:
    """The request span's name before routing: the method only (:func:`name_request_span` adds the
    route once it is known; the raw path holds ids)."""
    return str(scope.get("method", "HTTP")), {}


def name_request_span(request: Request[Any, Any, Any]) -> None:
    """Name the request's span by its route, and record the route (``http.route``)."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    route = request.scope.get("path_template")
    if route:
        span.update_name(f"{request.method} {route}")
        span.set_attribute("http.route", route)
