"""Traces (OpenTelemetry), metrics (Prometheus) and structured logs.

:func:`build_telemetry` makes an app's :class:`Telemetry` from its settings; runs, model turns and
tool calls record through it (``RunServices.telemetry``), and so do the hooks other parts call:
:meth:`Telemetry.record_retry`, :meth:`Telemetry.record_fallback`, :meth:`Telemetry.record_cooldown`
(vendor retries, fallbacks and cool-downs), :meth:`Telemetry.problem` (refusals, quotas among them)
and :meth:`Telemetry.write_wait` (SQLite's write turn). :func:`trace_headers` gives the W3C trace
context of the current span for calls that do not go through the traced vendor client (MCP).
What is recorded, and its names, is in docs/operations.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iris.app.settings import Settings, SettingsError
from iris.app.telemetry.core import W3C, ChatTelemetry, RunTelemetry, Telemetry, ToolTelemetry
from iris.app.telemetry.metrics import check_multiprocess, process_metrics

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["ChatTelemetry", "RunTelemetry", "Telemetry", "ToolTelemetry", "build_telemetry", "trace_headers"]


def build_telemetry(settings: Settings, *, span_exporter: SpanExporter | None = None) -> Telemetry:
    """The app's telemetry: metrics unless ``IRIS_METRICS=false``, traces only when the ``OTEL_*``
    settings configure them (or a test passes ``span_exporter``)."""
    metrics = None
    if settings.metrics:
        if problem := check_multiprocess(settings.prometheus_multiproc_dir):
            raise SettingsError(problem)
        metrics = process_metrics()
    provider = None
    if settings.otel.tracing or span_exporter is not None:
        from iris.app.telemetry.tracing import tracer_provider

        provider = tracer_provider(settings.otel, span_exporter)
    return Telemetry(metrics=metrics, provider=provider, capture_content=settings.trace_content)


def trace_headers() -> dict[str, str]:
    """``traceparent`` (and ``tracestate``) of the current span, for a request the traced vendor
    client does not make (an MCP server's); empty when there is no span."""
    headers: dict[str, str] = {}
    W3C.inject(headers)
    return headers
