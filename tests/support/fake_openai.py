"""A fake OpenAI Chat Completions server replaying the real SSE wire format, for provider tests.

A plain ASGI callable (serve it with :func:`tests.support.http_server.serve_asgi`; its base URL + ``/v1``
is the API base). ``POST /v1/chat/completions`` is recorded, the bearer key is checked like OpenAI does,
then the next scripted reply is played:

- streams are ``text/event-stream`` with data-only ``chat.completion.chunk`` frames: a first chunk with
  ``delta: {"role": "assistant", "content": "", "refusal": null}``, content or ``tool_calls`` deltas
  (tool calls by ``index``, id and name on the first delta, arguments in pieces), a chunk with
  ``finish_reason``, the ``stream_options.include_usage`` chunk (``choices: []``), then ``data: [DONE]``;
  every chunk carries ``"usage": null`` until the last one, and an ``obfuscation`` padding field;
- errors are OpenAI's JSON ``{"error": {"message", "type", "param", "code"}}`` with its statuses;
- broken streams send some chunks, then either cut the connection or end cleanly without ``[DONE]``;
- stalled answers never end: no headers at all, or (after some chunks) silence, SSE keep-alive comments,
  or content trickling forever — until the client goes away.

With no reply scripted, a request gets a 500 saying so (tests script every answer).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.support.asgi import Receive, Scope, Send, encode_headers, read_whole_request, send_stream

CREATED = 1_760_000_000
FINGERPRINT = "fp_fake0001"


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One request as the fake saw it (headers lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any = None


@dataclass(frozen=True, kw_only=True)
class ToolCallScript:
    """A tool call to stream: its id, name, and the argument text in the pieces to send it in."""

    id: str
    name: str
    argument_pieces: Sequence[str]


Stall = Literal["no_headers", "silent", "keepalive", "trickle"]


@dataclass(frozen=True, kw_only=True)
class _Reply:
    status: int
    headers: list[tuple[bytes, bytes]]
    frames: list[bytes] = field(default_factory=list)
    end: Literal["complete", "cut"] = "complete"
    stall: Stall | None = None


class FakeOpenAI:
    """Scripted OpenAI: call :meth:`text`, :meth:`tool_calls`, :meth:`error`… once per expected request."""

    def __init__(self, api_key: str | None = "sk-test-123", model: str = "gpt-4o-2024-08-06") -> None:
        self.api_key = api_key
        self.model = model
        self.requests: list[RecordedRequest] = []
        self._replies: deque[_Reply] = deque()
        self._count = 0
        self._stall_every = 0.1
        self.hung_up = threading.Event()
        """Set when a client hung up on a stalled answer (a cancelled vendor call)."""

    def reset(self) -> None:
        """Forget recorded requests and unplayed replies (one server can then serve a whole test module)."""
        self.requests.clear()
        self._replies.clear()

    # -- scripting -----------------------------------------------------------------------------------

    def text(
        self,
        *pieces: str,
        finish_reason: str = "stop",
        usage: tuple[int, int] | None = (21, 7),
        completion_id: str = "chatcmpl-fake1",
    ) -> None:
        """A streamed text answer in ``pieces``."""
        chunks = [self._chunk(completion_id, {"role": "assistant", "content": "", "refusal": None})]
        chunks += [self._chunk(completion_id, {"content": piece}) for piece in pieces]
        chunks.append(self._chunk(completion_id, {}, finish_reason=finish_reason))
        if usage is not None:
            chunks.append(self._usage_chunk(completion_id, *usage))
        self._replies.append(self._sse([*chunks, "[DONE]"]))

    def reasoning(
        self,
        thoughts: Sequence[str],
        pieces: Sequence[str],
        *,
        key: str = "reasoning_content",
        reasoning_tokens: int = 64,
        completion_id: str = "chatcmpl-fake5",
    ) -> None:
        """A compatible server's reasoning answer: ``reasoning_content`` (DeepSeek, vLLM) or
        ``reasoning`` (OpenRouter) deltas with ``content: null`` first, then the answer, and usage with
        ``completion_tokens_details.reasoning_tokens``."""
        chunks = [self._chunk(completion_id, {"role": "assistant", "content": None, key: ""})]
        chunks += [self._chunk(completion_id, {"content": None, key: thought}) for thought in thoughts]
        chunks += [self._chunk(completion_id, {"content": piece}) for piece in pieces]
        chunks.append(self._chunk(completion_id, {}, finish_reason="stop"))
        chunks.append(self._usage_chunk(completion_id, 30, reasoning_tokens + 5, reasoning=reasoning_tokens))
        self._replies.append(self._sse([*chunks, "[DONE]"]))

    def tool_calls(
        self,
        calls: Sequence[ToolCallScript],
        *,
        preamble: str = "",
        usage: tuple[int, int] | None = (40, 18),
        completion_id: str = "chatcmpl-fake2",
    ) -> None:
        """Streamed tool calls (optionally after some text), ending with ``finish_reason: tool_calls``."""
        first: dict[str, Any] = {"role": "assistant", "content": "" if preamble else None, "refusal": None}
        chunks = [self._chunk(completion_id, first)]
        if preamble:
            chunks.append(self._chunk(completion_id, {"content": preamble}))
        for index, call in enumerate(calls):
            opening = {
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            chunks.append(self._chunk(completion_id, {"tool_calls": [opening]}))
            for piece in call.argument_pieces:
                chunks.append(
                    self._chunk(
                        completion_id, {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                    )
                )
        chunks.append(self._chunk(completion_id, {}, finish_reason="tool_calls"))
        if usage is not None:
            chunks.append(self._usage_chunk(completion_id, *usage))
        self._replies.append(self._sse([*chunks, "[DONE]"]))

    def broken(self, *pieces: str, cut: bool = True, completion_id: str = "chatcmpl-fake3") -> None:
        """Some text, then the connection is cut (``cut``) or the body ends cleanly without ``[DONE]``."""
        chunks = [self._chunk(completion_id, {"role": "assistant", "content": "", "refusal": None})]
        chunks += [self._chunk(completion_id, {"content": piece}) for piece in pieces]
        reply = self._sse(chunks)
        self._replies.append(
            _Reply(status=200, headers=reply.headers, frames=reply.frames, end="cut" if cut else "complete")
        )

    def stalled(self, stall: Stall, *pieces: str, every: float = 0.1) -> None:
        """An answer that never ends: ``no_headers`` never answers at all; the others send 200 and
        ``pieces`` of text, then ``silent`` sends nothing more, ``keepalive`` only ``: keep-alive``
        comments every ``every`` seconds, ``trickle`` another content chunk every ``every`` seconds."""
        chunks = [self._chunk("chatcmpl-stall", {"role": "assistant", "content": "", "refusal": None})]
        chunks += [self._chunk("chatcmpl-stall", {"content": piece}) for piece in pieces]
        reply = self._sse(chunks)
        self._replies.append(_Reply(status=200, headers=reply.headers, frames=reply.frames, stall=stall))
        self._stall_every = every

    def malformed(self, *pieces: str, completion_id: str = "chatcmpl-fake4") -> None:
        """Some text, then a frame whose data is not JSON (a proxy mangling the stream)."""
        chunks = [self._chunk(completion_id, {"content": piece}) for piece in pieces]
        reply = self._sse(chunks)
        reply.frames.append(b'data: {"id": "chatcmpl-fake4", "choices": [{"delta": {"content": "x"\n\n')
        self._replies.append(reply)

    def error(
        self,
        status: int,
        message: str,
        *,
        type_: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        """An error answer with OpenAI's JSON body."""
        body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
        self._replies.append(_json_reply(status, body, headers))

    def rate_limited(self, retry_after: str = "7") -> None:
        """OpenAI's 429 for tokens per minute, with ``retry-after`` and the ``x-ratelimit-*`` headers."""
        self.error(
            429,
            f"Rate limit reached for {self.model} in organization org-fake on tokens per min (TPM): "
            "Limit 30000, Used 29971, Requested 840. Please try again in 1.622s. Visit "
            "https://platform.openai.com/account/rate-limits to learn more.",
            type_="tokens",
            code="rate_limit_exceeded",
            headers=[
                ("retry-after", retry_after),
                ("x-ratelimit-limit-tokens", "30000"),
                ("x-ratelimit-remaining-tokens", "29"),
                ("x-ratelimit-reset-tokens", "1.622s"),
            ],
        )

    def download_failed(self, url: str, *, timeout: bool = True) -> None:
        """The 400 OpenAI answers when its servers cannot fetch an ``image_url``."""
        if timeout:
            self.error(400, f"Timeout while downloading {url}.", code="invalid_value", param="url")
        else:
            self.error(400, f"Error while downloading {url}.", code="invalid_image_url")

    def server_error(self) -> None:
        """OpenAI's generic 500."""
        self.error(
            500,
            "The server had an error while processing your request. Sorry about that!",
            type_="server_error",
        )

    # -- ASGI ----------------------------------------------------------------------------------------

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        incoming = await read_whole_request(scope, receive)
        if incoming is None:
            return
        self.requests.append(
            RecordedRequest(
                method=incoming.method, path=incoming.path, headers=incoming.headers, json=incoming.json
            )
        )
        reply = self._answer(incoming.method, incoming.path, incoming.headers)
        if reply.stall is not None:
            await self._stall(reply, receive, send)
            return
        await self._play(reply, send)

    async def _stall(self, reply: _Reply, receive: Receive, send: Send) -> None:
        """Play a stalled reply until the client disconnects."""
        gone = asyncio.ensure_future(receive())  # the request is read: the next message is the disconnect
        try:
            if reply.stall == "no_headers":
                await gone
                return
            await send({"type": "http.response.start", "status": reply.status, "headers": reply.headers})
            for frame in reply.frames:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            while not gone.done():
                await asyncio.wait([gone], timeout=self._stall_every)
                if gone.done():
                    break
                if reply.stall == "keepalive":
                    frame = b": keep-alive\n\n"
                elif reply.stall == "trickle":
                    frame = self._sse([self._chunk("chatcmpl-stall", {"content": "."})]).frames[0]
                else:
                    continue
                await send({"type": "http.response.body", "body": frame, "more_body": True})
        finally:
            if gone.done():
                self.hung_up.set()
            gone.cancel()

    def _answer(self, method: str, path: str, headers: dict[str, str]) -> _Reply:
        if method != "POST" or path != "/v1/chat/completions":
            return _json_reply(
                404,
                {
                    "error": {
                        "message": f"Invalid URL ({method} {path})",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                },
            )
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return self._bad_key(headers.get("authorization", ""))
        if not self._replies:
            return _json_reply(
                500,
                {
                    "error": {
                        "message": "no reply scripted",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                },
            )
        return self._replies.popleft()

    @staticmethod
    def _bad_key(authorization: str) -> _Reply:
        """OpenAI's 401 masks all but the first 3 and last 4 characters of the key it was given."""
        given = authorization.removeprefix("Bearer ")
        if not given:
            message = (
                "You didn't provide an API key. You need to provide your API key in an Authorization header "
                "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
            )
            return _json_reply(
                401,
                {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}},
            )
        masked = f"{given[:3]}{'*' * max(len(given) - 7, 0)}{given[-4:]}"
        message = (
            f"Incorrect API key provided: {masked}. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
        return _json_reply(
            401,
            {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
        )

    @staticmethod
    async def _play(reply: _Reply, send: Send) -> None:
        await send_stream(send, reply.status, reply.headers, reply.frames, cut=reply.end == "cut")

    # -- wire format ---------------------------------------------------------------------------------

    def _chunk(
        self, completion_id: str, delta: dict[str, Any], finish_reason: str | None = None
    ) -> dict[str, Any]:
        self._count += 1
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.model,
            "service_tier": "default",
            "system_fingerprint": FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            "usage": None,
            "obfuscation": "x" * (self._count % 7),
        }

    def _usage_chunk(
        self, completion_id: str, prompt: int, completion: int, *, reasoning: int = 0
    ) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.model,
            "service_tier": "default",
            "system_fingerprint": FINGERPRINT,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": reasoning,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
            "obfuscation": "",
        }

    @staticmethod
    def _sse(chunks: Sequence[dict[str, Any] | str]) -> _Reply:
        frames = [
            f"data: {c if isinstance(c, str) else json.dumps(c, separators=(',', ':'))}\n\n".encode()
            for c in chunks
        ]
        headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache, must-revalidate"),
            (b"openai-processing-ms", b"118"),
            (b"x-request-id", b"req_fake"),
        ]
        return _Reply(status=200, headers=headers, frames=frames)


def _json_reply(status: int, body: Any, headers: Sequence[tuple[str, str]] = ()) -> _Reply:
    encoded = json.dumps(body, indent=2).encode()
    return _Reply(
        status=status,
        headers=[
            (b"content-type", b"application/json"),
            (b"content-length", str(len(encoded)).encode()),
            *encode_headers(headers),
        ],
        frames=[encoded],
    )
