"""A fake Gemini API: ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` streaming as Google does.

A plain ASGI callable (serve it with :func:`tests.support.http_server.serve_asgi`) that records every
request and replays scripted answers, one per request. The wire format is Google's ``alt=sse``: data-only
frames ``data: <GenerateContentResponse JSON>\\r\\n\\r\\n`` with no end sentinel; the last chunk carries
``candidates[0].finishReason`` and every chunk the cumulative ``usageMetadata``.

Like the real API it checks the key before answering: no ``x-goog-api-key`` → 403 ``PERMISSION_DENIED``;
a wrong one → **400** ``INVALID_ARGUMENT`` with reason ``API_KEY_INVALID`` (Google does not use 401 for
API keys). Errors use Google's body ``{"error": {"code", "message", "status", "details"}}``.

Scripts: :meth:`FakeGemini.reply` (chunks), :meth:`reply_error` (status + error body + headers), and
``end="cut"`` (close the connection mid-body) for a broken stream; a clean end is simply a script whose
last chunk has no ``finishReason``. With nothing scripted, the answer is the text "Hello!".
"""

from __future__ import annotations

import json
import re
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

Chunk = dict[str, Any]

MODEL_VERSION = "gemini-2.5-flash"
RESPONSE_ID = "bJ5saKzUFdTEz7IPkfSRoQ4"
End = Literal["complete", "cut"]
_ROUTE = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):streamGenerateContent$")


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One request as the fake saw it (header names lower-cased; ``json`` is the parsed body or None)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    json: Any

    @property
    def model(self) -> str | None:
        match = _ROUTE.match(self.path)
        return match["model"] if match else None


@dataclass(frozen=True, kw_only=True)
class _Script:
    status: int = 200
    chunks: Sequence[Chunk] = ()
    raw: Sequence[bytes] = ()
    end: End = "complete"
    body: bytes = b""
    headers: Sequence[tuple[str, str]] = ()


def frame(chunk: Chunk) -> bytes:
    """One data-only SSE frame as Google writes it (CRLF line ends)."""
    return f"data: {json.dumps(chunk)}\r\n\r\n".encode()


def usage(prompt: int, candidates: int | None, *, thoughts: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"promptTokenCount": prompt}
    total = prompt
    if candidates is not None:
        meta["candidatesTokenCount"] = candidates
        total += candidates
    if thoughts is not None:
        meta["thoughtsTokenCount"] = thoughts
        total += thoughts
    meta["totalTokenCount"] = total
    meta["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": prompt}]
    return meta


def chunk(
    parts: Sequence[dict[str, Any]],
    *,
    finish: str | None = None,
    prompt_tokens: int = 8,
    candidate_tokens: int | None = None,
    thoughts: int | None = None,
) -> Chunk:
    """One ``GenerateContentResponse`` of the stream."""
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}}
    if finish is not None:
        candidate["finishReason"] = finish
    candidate["index"] = 0
    return {
        "candidates": [candidate],
        "usageMetadata": usage(prompt_tokens, candidate_tokens, thoughts=thoughts),
        "modelVersion": MODEL_VERSION,
        "responseId": RESPONSE_ID,
    }


def text_answer(
    pieces: Sequence[str], *, prompt_tokens: int = 8, candidate_tokens: int = 12, finish: str = "STOP"
) -> list[Chunk]:
    """A text answer: one chunk per piece, the last one with ``finishReason`` and the final counts."""
    last = len(pieces) - 1
    return [
        chunk(
            [{"text": piece}],
            finish=finish if i == last else None,
            prompt_tokens=prompt_tokens,
            candidate_tokens=candidate_tokens if i == last else i + 1,
        )
        for i, piece in enumerate(pieces)
    ]


def function_call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


def error_body(code: int, status: str, message: str, details: Sequence[dict[str, Any]] = ()) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return json.dumps({"error": error}).encode()


def api_key_invalid_body() -> bytes:
    """What Google answers (HTTP 400) for a key it does not know."""
    return error_body(
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
        [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
            {
                "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                "locale": "en-US",
                "message": "API key not valid. Please pass a valid API key.",
            },
        ],
    )


@dataclass
class FakeGemini:
    """The Gemini API for one API key; scripted answers are used in order, one per request."""

    api_key: str
    requests: list[RecordedRequest] = field(default_factory=list)
    _scripts: deque[_Script] = field(default_factory=deque)

    # -- test controls -------------------------------------------------------------------------------

    def reply(self, chunks: Sequence[Chunk], *, raw: Sequence[bytes] = (), end: End = "complete") -> None:
        """Stream ``chunks`` (then ``raw`` frames); ``end="cut"`` drops the connection mid-body."""
        self._scripts.append(_Script(chunks=chunks, raw=raw, end=end))

    def reply_error(self, status: int, body: bytes, *, headers: Sequence[tuple[str, str]] = ()) -> None:
        """Answer ``status`` with ``body`` (see :func:`error_body`) and e.g. ``retry-after``."""
        self._scripts.append(_Script(status=status, body=body, headers=headers))

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
        if request.method != "POST" or request.model is None:
            await _send_error(send, _Script(status=404, body=error_body(404, "NOT_FOUND", "Not Found")))
            return
        key = request.headers.get("x-goog-api-key")
        if not key:
            message = (
                "Method doesn't allow unregistered callers (callers without established identity). "
                "Please use API Key or other form of API consumer identity to call this API."
            )
            await _send_error(send, _Script(status=403, body=error_body(403, "PERMISSION_DENIED", message)))
            return
        if key != self.api_key:
            await _send_error(send, _Script(status=400, body=api_key_invalid_body()))
            return
        if not isinstance(request.json, dict) or not request.json.get("contents"):
            body = error_body(
                400, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents is not specified\n"
            )
            await _send_error(send, _Script(status=400, body=body))
            return
        script = self._scripts.popleft() if self._scripts else _Script(chunks=text_answer(["Hello!"]))
        if script.status != 200:
            await _send_error(send, script)
            return
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"content-disposition", b"attachment"),
            (b"vary", b"Origin, X-Origin, Referer"),
        ]
        frames = [*(frame(item) for item in script.chunks), *script.raw]
        await send_stream(send, 200, headers, frames, cut=script.end == "cut")


async def _send_error(send: Send, script: _Script) -> None:
    headers = [(b"content-type", b"application/json; charset=UTF-8")]
    headers += encode_headers(script.headers)
    await send_response(send, script.status, headers, script.body)
