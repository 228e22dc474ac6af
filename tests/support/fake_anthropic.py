"""A fake Anthropic Messages API: ``POST /v1/messages`` answering with Anthropic's real SSE stream.

A plain ASGI callable (serve it with :func:`tests.support.http_server.serve_asgi`) that records every
request and replays scripted answers, one per request, in the wire format Anthropic uses:
``event: <name>\\ndata: <json>\\n\\n`` frames ``message_start`` → (``content_block_start`` →
``content_block_delta``* → ``content_block_stop``)* → ``message_delta`` → ``message_stop``, with ``ping``
frames in between, ``Content-Type: text/event-stream; charset=utf-8``.

Like the real API it checks before answering: a wrong or missing ``x-api-key`` → 401
``authentication_error`` "invalid x-api-key"; no ``anthropic-version`` → 400; a body without
``model``/``messages``/``max_tokens`` → 400 ``invalid_request_error``. Errors use Anthropic's body
``{"type": "error", "error": {"type": …, "message": …}, "request_id": "req_…"}``.

Scripts: :meth:`FakeAnthropic.reply` (events), :meth:`reply_error` (status + error body + headers), and
``end="cut"`` (close the connection mid-body) or ``end="eof"`` (finish the body cleanly, without
``message_stop``) for broken streams. With nothing scripted, the answer is the text "Hello!".
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.support.asgi import (
    Receive,
    Scope,
    Send,
    encode_headers,
    read_whole_request,
    send_response,
    send_stream,
)

Event = tuple[str, dict[str, Any]]

MODEL = "claude-sonnet-4-5-20250929"
MESSAGE_ID = "msg_01XFDUDYJgAACzvnptvVoYEL"
REQUEST_ID = "req_011CSHoEeqs5C35K2UUqR7Fy"
End = Literal["complete", "cut", "eof"]


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One request as the fake saw it (header names lower-cased; ``json`` is the parsed body or None)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    json: Any


@dataclass(frozen=True, kw_only=True)
class _Script:
    status: int = 200
    events: Sequence[Event] = ()
    raw: Sequence[bytes] = ()
    """Extra frames sent as they are after ``events`` (e.g. a malformed ``data:`` line)."""
    end: End = "complete"
    body: bytes = b""
    headers: Sequence[tuple[str, str]] = ()


def frame(name: str, payload: dict[str, Any]) -> bytes:
    """One SSE frame exactly as Anthropic writes it."""
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def message_start(input_tokens: int, *, model: str = MODEL) -> Event:
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": MESSAGE_ID,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 1,
                },
            },
        },
    )


PING: Event = ("ping", {"type": "ping"})


def _event(kind: str, **fields: Any) -> Event:
    """``(name, payload)`` where the payload's ``type`` repeats the event name, as Anthropic does."""
    return (kind, {"type": kind, **fields})


def text_block(index: int, pieces: Sequence[str]) -> list[Event]:
    """A text content block streamed as ``text_delta`` pieces."""
    return [
        _event("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *(
            _event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
            for piece in pieces
        ),
        _event("content_block_stop", index=index),
    ]


def tool_block(index: int, call_id: str, name: str, json_pieces: Sequence[str]) -> list[Event]:
    """A ``tool_use`` block whose input arrives as ``input_json_delta`` pieces (the first one empty)."""
    start = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return [
        _event("content_block_start", index=index, content_block=start),
        *(
            _event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p})
            for p in ["", *json_pieces]
        ),
        _event("content_block_stop", index=index),
    ]


def thinking_block(index: int, pieces: Sequence[str], signature: str) -> list[Event]:
    """A ``thinking`` block: ``thinking_delta`` pieces, then its ``signature_delta``, as Claude streams it."""
    return [
        _event("content_block_start", index=index, content_block={"type": "thinking", "thinking": ""}),
        *(
            _event("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
            for piece in pieces
        ),
        _event("content_block_delta", index=index, delta={"type": "signature_delta", "signature": signature}),
        _event("content_block_stop", index=index),
    ]


def redacted_thinking_block(index: int, data: str) -> list[Event]:
    """A ``redacted_thinking`` block: encrypted, all of it in the start event, no deltas."""
    return [
        _event("content_block_start", index=index, content_block={"type": "redacted_thinking", "data": data}),
        _event("content_block_stop", index=index),
    ]


def message_end(stop_reason: str, output_tokens: int, stop_sequence: str | None = None) -> list[Event]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def text_answer(
    pieces: Sequence[str],
    *,
    input_tokens: int = 25,
    output_tokens: int = 12,
    stop_reason: str = "end_turn",
    stop_sequence: str | None = None,
) -> list[Event]:
    """A whole text answer as Anthropic streams it (a ``ping`` after the block starts)."""
    block = text_block(0, pieces)
    end = message_end(stop_reason, output_tokens, stop_sequence)
    return [message_start(input_tokens), block[0], PING, *block[1:], *end]


def error_event(error_type: str, message: str) -> Event:
    """The in-stream ``error`` event (e.g. ``overloaded_error`` after the answer began)."""
    return ("error", {"type": "error", "error": {"type": error_type, "message": message}})


def error_body(error_type: str, message: str) -> bytes:
    return json.dumps(
        {"type": "error", "error": {"type": error_type, "message": message}, "request_id": REQUEST_ID}
    ).encode()


@dataclass
class FakeAnthropic:
    """Anthropic for one API key; scripted answers are used in order, one per request."""

    api_key: str
    requests: list[RecordedRequest] = field(default_factory=list)
    _scripts: deque[_Script] = field(default_factory=deque)

    # -- test controls -------------------------------------------------------------------------------

    def reply(self, events: Sequence[Event], *, raw: Sequence[bytes] = (), end: End = "complete") -> None:
        """Stream ``events`` (then ``raw`` frames); ``end`` = "cut" drops the connection mid-body,
        "eof" ends the body cleanly whatever the events said."""
        self._scripts.append(_Script(events=events, raw=raw, end=end))

    def reply_error(
        self, status: int, error_type: str, message: str, *, headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        """Answer ``status`` with Anthropic's JSON error body (and e.g. ``retry-after``)."""
        self._scripts.append(_Script(status=status, body=error_body(error_type, message), headers=headers))

    # -- ASGI ----------------------------------------------------------------------------------------

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        incoming = await read_whole_request(scope, receive)
        if incoming is None:
            return
        request = RecordedRequest(
            method=incoming.method,
            path=incoming.path,
            query=incoming.query,
            headers=incoming.headers,
            json=incoming.json,
        )
        self.requests.append(request)
        await self._answer(request, send)

    async def _answer(self, request: RecordedRequest, send: Send) -> None:
        script = self._check(request)
        if script is None:
            script = self._scripts.popleft() if self._scripts else _Script(events=text_answer(["Hello!"]))
        if script.status != 200:
            await _send_error(send, script)
            return
        headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"request-id", REQUEST_ID.encode()),
        ]
        frames = [*(frame(name, payload) for name, payload in script.events), *script.raw]
        await send_stream(send, 200, headers, frames, cut=script.end == "cut")

    def _check(self, request: RecordedRequest) -> _Script | None:
        """The error the real API gives this request before streaming anything, if any."""
        if request.method != "POST" or request.path != "/v1/messages":
            return _Script(status=404, body=error_body("not_found_error", "Not Found"))
        if request.headers.get("x-api-key") != self.api_key:
            return _Script(status=401, body=error_body("authentication_error", "invalid x-api-key"))
        if "anthropic-version" not in request.headers:
            return _Script(
                status=400, body=error_body("invalid_request_error", "anthropic-version: header is required")
            )
        problem = _invalid(request.json)
        if problem:
            return _Script(status=400, body=error_body("invalid_request_error", problem))
        return None


def _invalid(body: Any) -> str | None:
    """What the real API says about a body it will not take (the few checks the tests rely on)."""
    if not isinstance(body, dict):
        return "There was an error parsing the body of your request"
    for name in ("model", "messages", "max_tokens"):
        if name not in body:
            return f"{name}: Field required"
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        return _invalid_thinking(body, thinking)
    return None


def _invalid_thinking(body: dict[str, Any], thinking: dict[str, Any]) -> str | None:
    """Extended thinking's rules: a budget of at least 1024 below ``max_tokens``, no temperature, and the
    assistant turn a tool-use continuation answers starts with its thinking block."""
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024:
        return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    if body["max_tokens"] <= budget:
        return "`max_tokens` must be greater than `thinking.budget_tokens`"
    if "temperature" in body:
        return "`temperature` may only be set to 1 when thinking is enabled"
    messages = body["messages"]
    last_user = messages[-1] if messages else {}
    continuing = isinstance(last_user.get("content"), list) and any(
        block.get("type") == "tool_result" for block in last_user["content"]
    )
    if continuing and len(messages) >= 2:
        first = messages[-2]["content"][0].get("type")
        if first not in ("thinking", "redacted_thinking"):
            return (
                "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                f"`{first}`. When `thinking` is enabled, a final `assistant` message must start with a "
                "thinking block."
            )
    return None


async def _send_error(send: Send, script: _Script) -> None:
    headers = [(b"content-type", b"application/json"), (b"request-id", REQUEST_ID.encode())]
    headers += encode_headers(script.headers)
    await send_response(send, script.status, headers, script.body)
