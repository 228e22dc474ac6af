"""A loopback OpenTelemetry collector: ``POST /v1/traces`` with an OTLP/HTTP protobuf body, decoded
with the protocol's own message types (``opentelemetry-proto``), as a real collector would."""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support.asgi import Receive, Scope, Send, read_whole_request


@dataclass
class FakeCollector:
    """Keeps every export request, decoded, with the headers it came with."""

    exports: list[tuple[dict[str, str], ExportTraceServiceRequest]] = field(default_factory=list)

    def spans(self) -> list[tuple[str, object]]:
        """``(service.name, span)`` of every span received, in order."""
        found: list[tuple[str, object]] = []
        for _, request in self.exports:
            for resource_spans in request.resource_spans:
                service = next(
                    (
                        a.value.string_value
                        for a in resource_spans.resource.attributes
                        if a.key == "service.name"
                    ),
                    "",
                )
                found += [(service, s) for scope in resource_spans.scope_spans for s in scope.spans]
        return found

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = await read_whole_request(scope, receive)
        if request is None:
            return
        if (request.method, request.path) != ("POST", "/v1/traces"):
            await _answer(send, 404, b"", "text/plain")
            return
        if request.headers.get("content-type") != "application/x-protobuf":
            await _answer(send, 415, b"", "text/plain")
            return
        body = request.body
        encoding = request.headers.get("content-encoding")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        decoded = ExportTraceServiceRequest()
        decoded.ParseFromString(body)
        self.exports.append((request.headers, decoded))
        await _answer(send, 200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")


async def _answer(send: Send, status: int, body: bytes, content_type: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type.encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
