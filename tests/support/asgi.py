"""Raw-ASGI plumbing shared by the fake third-party servers (``fake_*.py``).

The fakes are plain ASGI callables, with no framework between the socket and the fake, so they see
streamed request bodies chunk by chunk and can cut a response mid-body. Reading a request and sending
an answer at that level is the same few loops in every fake; they live here once, and each fake keeps
only its own routes, checks, error bodies and wire format.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = Iterable[tuple[bytes, bytes]]


@dataclass(frozen=True, kw_only=True)
class IncomingRequest:
    """One HTTP request as read off the wire (header names lower-cased, ``path`` percent-decoded)."""

    method: str
    path: str
    raw_path: str
    query: str
    headers: dict[str, str]
    body: bytes
    body_chunks: int
    """How many ASGI ``http.request`` messages carried body bytes (>1: it arrived in pieces)."""
    complete: bool
    """False when the client went away (``http.disconnect``) before the body ended."""

    @property
    def json(self) -> Any:
        """The body parsed as JSON; None when it is empty, incomplete or not JSON."""
        if not self.complete or not self.body:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None


async def read_request(scope: Scope, receive: Receive) -> IncomingRequest:
    """Read the request's whole body, or as much as arrived before the client disconnected."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    body = bytearray()
    pieces = 0
    complete = False
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        if chunk:
            body.extend(chunk)
            pieces += 1
        if not message.get("more_body", False):
            complete = True
            break
    raw_path = scope.get("raw_path") or scope["path"].encode()
    return IncomingRequest(
        method=scope["method"],
        path=scope["path"],
        raw_path=raw_path.decode("latin-1"),
        query=scope.get("query_string", b"").decode("latin-1"),
        headers=headers,
        body=bytes(body),
        body_chunks=pieces,
        complete=complete,
    )


async def read_whole_request(scope: Scope, receive: Receive) -> IncomingRequest | None:
    """The request once its whole body has arrived; None for a non-HTTP scope or a client that left first."""
    if scope["type"] != "http":
        return None
    request = await read_request(scope, receive)
    return request if request.complete else None


def encode_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """``(name, value)`` string pairs as ASGI wants them (latin-1 bytes)."""
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


async def send_response(
    send: Send, status: int, headers: Headers, body: bytes, *, piece_size: int | None = None
) -> None:
    """A complete response: ``body`` in one message, or in ``piece_size`` pieces (the last one final)."""
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    if not body:
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    step = piece_size or len(body)
    view = memoryview(body)
    for start in range(0, len(view), step):
        end = start + step
        await send(
            {"type": "http.response.body", "body": bytes(view[start:end]), "more_body": end < len(view)}
        )


async def send_stream(
    send: Send, status: int, headers: Headers, chunks: Iterable[bytes], *, cut: bool = False
) -> None:
    """A streamed response: each chunk as its own body message, then the end of the body.

    With ``cut`` the body is never ended: uvicorn then closes the socket mid-body, and the client sees
    an incomplete (chunked) response.
    """
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    for chunk in chunks:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    if cut:
        return
    await send({"type": "http.response.body", "body": b"", "more_body": False})


class ConnectionCounter:
    """Wraps a fake's ASGI app and counts the TCP connections its requests came on.

    uvicorn gives each connection its own client ``(host, port)``; a client that reuses its pooled
    connection sends every request from the same port, one that opens a new connection per request does not.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self._app = app
        self.peers: list[tuple[str, int]] = []

    @property
    def connections(self) -> int:
        """How many distinct connections the requests so far arrived on."""
        return len(set(self.peers))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("client"):
            host, port = scope["client"]
            self.peers.append((host, port))
        await self._app(scope, receive, send)
