"""A fake Ollama server for ``POST /api/chat``, replaying its real NDJSON streaming wire format.

A plain ASGI callable (serve it with :func:`tests.support.http_server.serve_asgi`; its base URL is the
host). Requests are recorded, then the next scripted reply is played:

- streams are ``application/x-ndjson``: one ``{"model", "created_at", "message": {"role": "assistant",
  "content": …}, "done": false}`` object per line, tool calls whole in ``message.tool_calls`` (with an
  ``id`` and ``function.index`` as current servers send them, or without, as older ones did), and a last
  object with ``"done": true``, ``done_reason`` and the statistics (``prompt_eval_count``,
  ``eval_count`` and the durations in nanoseconds);
- ``think: true`` answers stream ``message.thinking`` before ``message.content``;
- errors are ``{"error": "…"}`` with the HTTP status, or such an object as a line mid-stream;
- broken streams send some lines, then cut the connection, end without the ``done`` object, or send a
  line that is not JSON.

With ``api_key`` set it checks ``Authorization: Bearer <key>`` as ollama.com does. With no reply
scripted, a request gets a 500 saying so.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.support.asgi import Receive, Scope, Send, encode_headers, read_whole_request, send_stream

CREATED_AT = "2025-07-07T20:22:19.184789Z"


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One request as the fake saw it (headers lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any = None


@dataclass(frozen=True, kw_only=True)
class _Reply:
    status: int
    content_type: str
    lines: list[bytes] = field(default_factory=list)
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    end: Literal["complete", "cut"] = "complete"


class FakeOllama:
    """Scripted Ollama: call :meth:`text`, :meth:`tool_calls`, :meth:`error`… once per expected request."""

    def __init__(self, model: str = "llava:13b", api_key: str | None = None) -> None:
        self.model = model
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self._replies: deque[_Reply] = deque()

    def reset(self) -> None:
        """Forget recorded requests and unplayed replies (one server can then serve a whole test module)."""
        self.requests.clear()
        self._replies.clear()

    # -- scripting -----------------------------------------------------------------------------------

    def text(
        self,
        *pieces: str,
        done_reason: str | None = "stop",
        prompt_eval_count: int | None = 26,
        eval_count: int | None = 282,
    ) -> None:
        """A streamed answer; ``done_reason=None`` omits it, as servers before mid-2024 did."""
        lines = [self._line(piece) for piece in pieces]
        lines.append(self._done(done_reason, prompt_eval_count, eval_count))
        self._replies.append(_stream(lines))

    def thinking(self, thoughts: Sequence[str], pieces: Sequence[str], *, eval_count: int = 120) -> None:
        """A thinking model's answer to ``think: true``: ``message.thinking`` pieces (with empty
        ``content``) first, then the answer's ``content`` pieces, as Ollama streams them."""
        lines = [self._line("", thinking=thought) for thought in thoughts]
        lines += [self._line(piece) for piece in pieces]
        lines.append(self._done("stop", 26, eval_count))
        self._replies.append(_stream(lines))

    def tool_calls(
        self,
        calls: Sequence[tuple[str, dict[str, Any]]],
        *,
        ids: Sequence[str] | None = None,
        preamble: str = "",
        prompt_eval_count: int = 169,
        eval_count: int = 15,
    ) -> None:
        """Tool calls (``(name, arguments)``), one per line; ``ids=None`` sends none, as old servers did."""
        lines = [self._line(preamble)] if preamble else []
        for index, (name, arguments) in enumerate(calls):
            call: dict[str, Any] = {"function": {"name": name, "arguments": arguments}}
            if ids is not None:
                call = {"id": ids[index], "function": {"index": index, "name": name, "arguments": arguments}}
            lines.append(self._line("", tool_calls=[call]))
        lines.append(self._done("stop", prompt_eval_count, eval_count))
        self._replies.append(_stream(lines))

    def broken(self, *pieces: str, how: Literal["cut", "no_done", "malformed"] = "cut") -> None:
        """Some lines, then: the connection cut, a clean end without ``done``, or a line that is not JSON."""
        lines = [self._line(piece) for piece in pieces]
        if how == "malformed":
            lines.append(b'{"model":"llava:13b","message":{"role":"assistant","content":"x"\n')
        reply = _stream(lines)
        self._replies.append(
            _Reply(
                status=200,
                content_type=reply.content_type,
                lines=reply.lines,
                end="cut" if how == "cut" else "complete",
            )
        )

    def error_mid_stream(
        self, *pieces: str, error: str = "an error was encountered while running the model"
    ) -> None:
        """Some lines, then Ollama's ``{"error": …}`` line (the status is already 200)."""
        lines = [self._line(piece) for piece in pieces]
        lines.append(json.dumps({"error": error}).encode() + b"\n")
        self._replies.append(_stream(lines))

    def error(self, status: int, message: str, headers: Sequence[tuple[str, str]] = ()) -> None:
        """An error answer with Ollama's ``{"error": "…"}`` body."""
        body = json.dumps({"error": message}).encode()
        self._replies.append(
            _Reply(
                status=status,
                content_type="application/json; charset=utf-8",
                lines=[body],
                headers=encode_headers(headers),
            )
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
        await _play(self._answer(incoming.method, incoming.path, incoming.headers), send)

    def _answer(self, method: str, path: str, headers: dict[str, str]) -> _Reply:
        if method != "POST" or path != "/api/chat":
            return _Reply(status=404, content_type="text/plain", lines=[b"404 page not found"])
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return _Reply(
                status=401,
                content_type="application/json; charset=utf-8",
                lines=[b'{"error":"unauthorized"}'],
            )
        if not self._replies:
            return _Reply(
                status=500, content_type="application/json", lines=[b'{"error":"no reply scripted"}']
            )
        return self._replies.popleft()

    # -- wire format ---------------------------------------------------------------------------------

    def _line(self, content: str, **message: Any) -> bytes:
        obj = {
            "model": self.model,
            "created_at": CREATED_AT,
            "message": {"role": "assistant", "content": content, **message},
            "done": False,
        }
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"

    def _done(self, done_reason: str | None, prompt_eval_count: int | None, eval_count: int | None) -> bytes:
        obj: dict[str, Any] = {
            "model": self.model,
            "created_at": CREATED_AT,
            "message": {"role": "assistant", "content": ""},
        }
        if done_reason is not None:
            obj["done_reason"] = done_reason
        obj |= {"done": True, "total_duration": 4883583458, "load_duration": 1334875}
        if prompt_eval_count is not None:
            obj |= {"prompt_eval_count": prompt_eval_count, "prompt_eval_duration": 342546000}
        if eval_count is not None:
            obj |= {"eval_count": eval_count, "eval_duration": 4535599000}
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def _stream(lines: list[bytes]) -> _Reply:
    return _Reply(status=200, content_type="application/x-ndjson", lines=lines)


async def _play(reply: _Reply, send: Send) -> None:
    headers = [(b"content-type", reply.content_type.encode("latin-1")), *reply.headers]
    await send_stream(send, reply.status, headers, reply.lines, cut=reply.end == "cut")
