"""Vendor requests as CLIENT spans, and the W3C trace context every vendor receives.

An httpx transport wrapped around the vendor client's own (and its proxy mounts'), in place of the
contrib httpx instrumentation: that one parsed the URL, built the span's attributes and went through
its span machinery for every request, recorded or not. Here a request under a span that is not
recording (an unsampled run) only gets ``traceparent`` (its sampled flag clear: the vendor learns the
trace was not sampled) and ``tracestate``; one under a recorded span becomes a span of its own, kind CLIENT,
named by its method, with the stable HTTP client conventions' attributes, and the vendor's parent is
that span. The span ends when the response's headers arrive (the body is the model turn's, streamed
under its ``chat`` span). Outside any span nothing is added.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

import httpx
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from iris.app.telemetry.core import W3C

REDACTED = "REDACTED"


class TracedTransport(httpx.AsyncBaseTransport):
    """``inner``, with each request traced as the module docstring says."""

    def __init__(self, inner: httpx.AsyncBaseTransport, tracer: Tracer) -> None:
        self.inner = inner
        self.tracer = tracer

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        current = trace.get_current_span()
        if not current.is_recording():
            if current.get_span_context().is_valid:
                W3C.inject(request.headers)
            return await self.inner.handle_async_request(request)
        url = request.url
        span = self.tracer.start_span(
            request.method,
            kind=SpanKind.CLIENT,
            attributes={
                "http.request.method": request.method,
                "server.address": url.host,
                "server.port": url.port or (443 if url.scheme == "https" else 80),
                "url.full": full_url(url),
            },
        )
        with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
            W3C.inject(request.headers)
            try:
                response = await self.inner.handle_async_request(request)
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
                raise
            span.set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 400:
                span.set_attribute("error.type", str(response.status_code))
                span.set_status(Status(StatusCode.ERROR))
            return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def full_url(url: httpx.URL) -> str:
    """``url.full`` without credentials: no user info, and every query value redacted (vendors' keys
    travel there, ``?key=``), as the conventions ask of values that may be secrets."""
    clean = url.copy_with(username=None, password=None)
    if not url.query:
        return str(clean)
    query = urlencode([(key, REDACTED) for key, _ in parse_qsl(url.query.decode(), keep_blank_values=True)])
    return str(clean.copy_with(query=query.encode()))


def trace_client(client: httpx.AsyncClient, tracer: Tracer) -> None:
    """Wrap the client's transport and its mounts' (env proxies), as it was built."""
    client._transport = TracedTransport(client._transport, tracer)
    client._mounts = {
        pattern: None if transport is None else TracedTransport(transport, tracer)
        for pattern, transport in client._mounts.items()
    }
