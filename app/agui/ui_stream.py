"""The AI SDK's UI message stream (v1), translated from the one AG-UI event stream of a run.

``useChat`` (``ai``'s ``DefaultChatTransport``) reads ``data: <chunk>`` frames ending with
``data: [DONE]``. A run's AG-UI events map onto its chunks one answer at a time: ``start`` (the answer's
message id), ``start-step``/``finish-step`` around each model turn (the turn's tool outputs inside it, as
the SDK's own ``streamText`` puts them), ``text-*`` and ``reasoning-*`` by the AG-UI message ids,
``tool-input-*`` and ``tool-output-*`` for server tools (``dynamic``: the client does not define them),
``file`` for each image a tool returned, ``tool-approval-request`` for each approval interrupt, Iris's
own facts as ``data-*`` parts (``data-model``, ``data-fallbacks``, ``data-notices``, ``data-usage``),
a running tool's progress (the ``iris/toolProgress`` activity) as one ``data-tool-progress`` part per call,
then ``finish`` with the finish reason and the usage in ``messageMetadata``. A failure after the stream
began is one ``error`` chunk, then the end. No engine of its own: the same frames the AG-UI surfaces
relay, read from memory or the event log.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncGenerator, Callable
from typing import Any

from iris.app.agui.sse import PING, FrameSource, LastChunk

HEADERS = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "x-vercel-ai-ui-message-stream": "v1",
}
DONE = b"data: [DONE]\n\n"

_FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "content_filter": "content-filter",
}
_FACTS = {
    "iris/model": "model",
    "iris/attempts": "fallbacks",
    "iris/attachmentNotices": "notices",
    "iris/usage": "usage",
}
"""Event metadata Iris's own clients read, and the ``data-*`` part each becomes (one part per name,
updated in place: the chunk's ``id`` is the name)."""
TOOL_PROGRESS = "iris/toolProgress"
"""The activity type whose content becomes a ``data-tool-progress`` part."""


class UiChunks:
    """One answer's translation: feed it the run's AG-UI events in order, get UI message chunks back.

    ``message_id`` is the answer's id: the run's id for a new answer, or the assistant message a resumed
    run continues (an approval's answer goes on in the same message, as ``useChat`` expects)."""

    def __init__(self, message_id: str | None = None) -> None:
        self._message_id = message_id
        self._continuing = message_id is not None
        self._started = False
        self._in_step = False
        self._in_turn = False
        self._texts: set[str] = set()
        self._arguments: dict[str, tuple[str, list[str]]] = {}
        self._finish_reason = "stop"
        self._progress: dict[str, dict[str, Any]] = {}
        self.over = False

    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The chunks ``event`` becomes (none for what the UI stream has no word for)."""
        kind = event.get("type")
        out: list[dict[str, Any]] = []
        if not self._started:
            if kind == "RUN_STARTED" and self._message_id is None:
                self._message_id = event.get("runId")
            out.append({"type": "start", **({"messageId": self._message_id} if self._message_id else {})})
            self._started = True
        handler = _HANDLERS.get(str(kind))
        if handler is not None:
            out += handler(self, event)
        out += _facts(event.get("metadata"))
        if kind == "RUN_FINISHED":
            out += self._finished(event)
        elif kind == "RUN_ERROR":
            out = [*out, {"type": "error", "errorText": str(event.get("message") or "The run failed.")}]
            self.over = True
        return out

    def cut_short(self) -> list[dict[str, Any]]:
        """The chunks that end a stream whose run went on without it (a follower that fell behind)."""
        self.over = True
        return [{"type": "error", "errorText": "The stream ended before the answer did; resume it."}]

    def _step(self) -> list[dict[str, Any]]:
        """A model turn's first chunks: close the last step (its tool outputs are in), open the next.
        Nothing while the turn is open already (its reasoning came first)."""
        if self._in_turn:
            return []
        out = [{"type": "finish-step"}] if self._in_step else []
        self._in_step = self._in_turn = True
        return [*out, {"type": "start-step"}]

    def _text_start(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        return self._step()

    def _text_content(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        message_id = str(event["messageId"])
        out = self._step()
        if message_id not in self._texts:
            self._texts.add(message_id)
            out.append({"type": "text-start", "id": message_id})
        return [*out, {"type": "text-delta", "id": message_id, "delta": event.get("delta", "")}]

    def _text_end(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        output = (event.get("metadata") or {}).get("iris/workerAgentOutput") or {}
        reason = output.get("finishReason")
        if isinstance(reason, str):
            self._finish_reason = _FINISH_REASONS.get(reason, "other")
        self._in_turn = False  # the turn's tool outputs follow, in its step
        message_id = str(event["messageId"])
        return [{"type": "text-end", "id": message_id}] if message_id in self._texts else []

    def _reasoning_start(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        return self._step()

    def _tool_start(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        call_id, name = str(event["toolCallId"]), str(event["toolCallName"])
        self._arguments[call_id] = (name, [])
        return [
            *self._step(),
            {"type": "tool-input-start", "toolCallId": call_id, "toolName": name, "dynamic": True},
        ]

    def _tool_args(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        call_id, delta = str(event["toolCallId"]), str(event.get("delta", ""))
        self._arguments.setdefault(call_id, ("", []))[1].append(delta)
        return [{"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": delta}]

    def _tool_end(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        call_id = str(event["toolCallId"])
        name, pieces = self._arguments.get(call_id, ("", []))
        chunk = {"toolCallId": call_id, "toolName": name, "dynamic": True}
        try:
            arguments = json.loads("".join(pieces) or "{}")
        except ValueError:
            text = "".join(pieces)
            return [{"type": "tool-input-error", **chunk, "input": text, "errorText": "Not JSON."}]
        return [{"type": "tool-input-available", **chunk, "input": arguments}]

    def _tool_result(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        call_id = str(event["toolCallId"])
        output = (event.get("metadata") or {}).get("iris/toolAgentOutput")
        if not isinstance(output, dict):
            output = {"status": "succeeded", "resultSummary": event.get("content")}
        out: list[dict[str, Any]] = []
        if call_id not in self._arguments and not self._continuing:  # a resumed run, re-attached
            name = str(output.get("toolName") or "")
            self._arguments[call_id] = (name, [])
            chunk = {"toolCallId": call_id, "toolName": name, "dynamic": True, "input": {}}
            out += [*self._step(), {"type": "tool-input-available", **chunk}]
        return [*out, *tool_output_chunks(call_id, output)]

    def _activity(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """A tool's progress: the activity's content (a snapshot's, or the last one with a delta's patch
        applied, kept per activity message) as the call's ``data-tool-progress`` part. The part's ``id`` is
        the call's id, so the SDK updates it in place; not transient, so the message keeps the last state.
        A delta for an activity this stream never saw the start of is skipped."""
        if event.get("activityType") != TOOL_PROGRESS:
            return []
        message_id = str(event.get("messageId"))
        if event.get("type") == "ACTIVITY_SNAPSHOT":
            content = event.get("content")
        else:
            content = applied(self._progress.get(message_id), event.get("patch"))
        if not isinstance(content, dict) or not isinstance(content.get("toolCallId"), str):
            return []
        self._progress[message_id] = content
        return [{"type": "data-tool-progress", "id": content["toolCallId"], "data": content}]

    def _finished(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        self.over = True
        out: list[dict[str, Any]] = []
        outcome = event.get("outcome") or {}
        reason = self._finish_reason
        if outcome.get("type") == "interrupt":
            out += approval_requests(outcome.get("interrupts") or [])
            reason = "tool-calls"
        if self._in_step:
            out.append({"type": "finish-step"})
        if outcome.get("type") == "cancelled":
            return [*out, {"type": "abort", "reason": "cancelled"}]
        usage = event.get("usage") or []
        metadata = {"usage": usage, **({"model": m} if (m := _model(event)) else {})}
        return [*out, {"type": "finish", "finishReason": reason, "messageMetadata": metadata}]


def tool_output_chunks(call_id: str, output: dict[str, Any]) -> list[dict[str, Any]]:
    """A finished tool call's chunk by its status, then a ``file`` for each image it returned."""
    status = output.get("status")
    if status == "cancelled":
        return [{"type": "tool-output-denied", "toolCallId": call_id}]
    if status == "failed":
        error = str(output.get("error") or "The tool failed.")
        return [{"type": "tool-output-error", "toolCallId": call_id, "errorText": error, "dynamic": True}]
    chunks: list[dict[str, Any]] = [
        {"type": "tool-output-available", "toolCallId": call_id, "output": output, "dynamic": True}
    ]
    for part in output.get("content") or ():
        if isinstance(part, dict) and part.get("type") == "image" and part.get("url"):
            chunks.append(
                {"type": "file", "url": part["url"], "mediaType": part.get("mimeType", "image/png")}
            )
    return chunks


def approval_requests(interrupts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One ``tool-approval-request`` per approval interrupt; other interrupts as a ``data-interrupt``."""
    out: list[dict[str, Any]] = []
    for interrupt in interrupts:
        if interrupt.get("toolCallId") and interrupt.get("reason") == "tool_approval":
            out.append(
                {
                    "type": "tool-approval-request",
                    "approvalId": interrupt["id"],
                    "toolCallId": interrupt["toolCallId"],
                    **({"reason": interrupt["message"]} if interrupt.get("message") else {}),
                }
            )
        else:
            out.append({"type": "data-interrupt", "id": str(interrupt.get("id")), "data": interrupt})
    return out


def applied(document: dict[str, Any] | None, operations: object) -> dict[str, Any] | None:
    """``document`` with an RFC 6902 patch's ``add``/``replace``/``remove`` applied (a copy), or ``None``
    when there is no document or an operation does not fit it."""
    if document is None or not isinstance(operations, list):
        return None
    result: Any = copy.deepcopy(document)
    try:
        for operation in operations:
            result = _apply(result, operation)
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return result if isinstance(result, dict) else None


def _apply(document: Any, operation: dict[str, Any]) -> Any:
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in str(operation["path"]).split("/")[1:]]
    op = operation["op"]
    if not tokens:
        return None if op == "remove" else operation["value"]
    parent = document
    for token in tokens[:-1]:
        parent = parent[int(token)] if isinstance(parent, list) else parent[token]
    last = tokens[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if op == "add":
            parent.insert(index, operation["value"])
        elif op == "replace":
            parent[index] = operation["value"]
        else:
            del parent[index]
    elif op in ("add", "replace"):
        if op == "replace" and last not in parent:
            raise KeyError(last)
        parent[last] = operation["value"]
    else:
        del parent[last]
    return document


def _facts(metadata: object) -> list[dict[str, Any]]:
    if not isinstance(metadata, dict):
        return []
    return [
        {"type": f"data-{name}", "id": name, "data": metadata[key]}
        for key, name in _FACTS.items()
        if key in metadata
    ]


def _model(event: dict[str, Any]) -> str | None:
    metadata = event.get("metadata")
    model = metadata.get("iris/model") if isinstance(metadata, dict) else None
    return model if isinstance(model, str) else None


_Handler = Callable[[UiChunks, dict[str, Any]], list[dict[str, Any]]]
_HANDLERS: dict[str, _Handler] = {
    "TEXT_MESSAGE_START": UiChunks._text_start,
    "TEXT_MESSAGE_CONTENT": UiChunks._text_content,
    "TEXT_MESSAGE_END": UiChunks._text_end,
    "REASONING_START": UiChunks._reasoning_start,
    "REASONING_MESSAGE_START": lambda _, e: [{"type": "reasoning-start", "id": str(e["messageId"])}],
    "REASONING_MESSAGE_CONTENT": lambda _, e: [
        {"type": "reasoning-delta", "id": str(e["messageId"]), "delta": str(e.get("delta", ""))}
    ],
    "REASONING_MESSAGE_END": lambda _, e: [{"type": "reasoning-end", "id": str(e["messageId"])}],
    "TOOL_CALL_START": UiChunks._tool_start,
    "TOOL_CALL_ARGS": UiChunks._tool_args,
    "TOOL_CALL_END": UiChunks._tool_end,
    "TOOL_CALL_RESULT": UiChunks._tool_result,
    "ACTIVITY_SNAPSHOT": UiChunks._activity,
    "ACTIVITY_DELTA": UiChunks._activity,
}


def frame(chunk: dict[str, Any]) -> bytes:
    """One chunk as its SSE frame (JSON has no raw newlines: one ``data:`` line)."""
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


async def ui_relay(
    source: FrameSource,
    *,
    chunks: UiChunks,
    ping_seconds: float,
    on_close: Callable[[], None],
) -> AsyncGenerator[bytes, None]:
    """The UI message stream body for one subscriber: the run's frames translated, ``data: [DONE]`` last
    (with the response's end); a ping comment after a silence. A client leaving only unsubscribes."""
    try:
        while (batch := await source.next_batch(ping_seconds)) is not None:
            if not batch:
                yield PING
            body = b"".join(frame(c) for _, payload in batch for c in chunks.feed(json.loads(payload)))
            if chunks.over:
                yield LastChunk(body + DONE)
                return
            if body:
                yield body
        yield LastChunk(b"".join(frame(c) for c in chunks.cut_short()) + DONE)
    finally:
        on_close()
