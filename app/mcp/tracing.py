"""The W3C trace context of a tool call's span, carried to the MCP server: in the request's
``params._meta`` (``traceparent``, ``tracestate``: the MCP convention, SEP-414) over either transport,
and over Streamable HTTP also as the request's headers (:func:`carry_trace_context`)."""

from __future__ import annotations

import json
from typing import cast

import httpx2
import mcp_types as mt

from iris.app.telemetry import trace_headers


def trace_meta() -> mt.RequestParamsMeta | None:
    """The current span's W3C trace context for a request's ``_meta``; none outside a span."""
    headers = trace_headers()
    return cast("mt.RequestParamsMeta", headers) if headers else None  # an open map: any keys


TRACE_CONTEXT = ("traceparent", "tracestate")


async def carry_trace_context(request: httpx2.Request) -> None:
    """A Streamable HTTP request whose JSON-RPC message carries trace context in ``params._meta``
    also carries it as headers. Only a body that names ``traceparent`` is parsed (a tool call in a
    traced run), so other requests cost a byte search."""
    try:
        body = request.content
    except httpx2.RequestNotRead:  # a streamed body: not a JSON-RPC message the SDK sends
        return
    if b'"traceparent"' not in body:
        return
    try:
        meta = json.loads(body)["params"]["_meta"]
    except (ValueError, KeyError, TypeError):
        return
    for name in TRACE_CONTEXT:
        if isinstance(value := meta.get(name), str):
            request.headers[name] = value
