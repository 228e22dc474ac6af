"""A stateless run's AG-UI events → a Responses API ``Response`` and its semantic stream events.

Each answer part is an output item, opened when it begins and closed when the next begins or the
run ends: reasoning a ``reasoning`` item (its text a summary part: ``response.reasoning_summary_*``),
text a ``message`` item with one ``output_text`` part (``response.content_part.*``,
``response.output_text.*``), each tool call a ``function_call`` item
(``response.function_call_arguments.*``). Every event carries the next ``sequence_number``. The run
ends the stream with ``response.completed``, ``response.incomplete`` (the vendor stopped at
``max_output_tokens`` or its content filter) or ``response.failed``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from iris.app.agui.events import (
    AgUiEvent,
    ReasoningMessageContent,
    RunError,
    RunFinished,
    TextMessageContent,
    TextMessageEnd,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
)
from iris.app.agui.sse import LastChunk
from iris.app.api.openai.responses_input import item_id
from iris.app.api.openai.responses_wire import (
    FunctionCallOut,
    IncompleteDetails,
    InputTokensDetails,
    OutputItem,
    OutputMessage,
    OutputText,
    OutputTokensDetails,
    ReasoningOut,
    ResponseErrorBody,
    ResponseObject,
    ResponseUsage,
    SummaryText,
)
from iris.app.runs import MODEL_KEY, WORKER_OUTPUT_KEY

Event = dict[str, Any]
log = logging.getLogger("iris.gateway")
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}
_RATE_LIMITED = {"provider_rate_limit", "quota_exceeded"}


@dataclass(slots=True)
class _Open:
    """The output item being written: its kind, place, id and text so far (a call's name and id)."""

    kind: str
    index: int
    id: str
    parts: list[str] = field(default_factory=list)
    name: str = ""
    call_id: str = ""


@dataclass(slots=True)
class ResponseDraft:
    """The response being answered: the request's echo (``template``) and the run's output so far."""

    template: ResponseObject
    response_hex: str
    output: list[OutputItem] = field(default_factory=list)
    sequence: int = 0
    vendor_finish: str = "stop"
    usage: ResponseUsage | None = None
    failed: bool = False
    _open: _Open | None = None

    def take(self, event: AgUiEvent) -> list[Event]:
        """Note ``event``; the stream events it makes (none for most)."""
        if isinstance(event, ReasoningMessageContent):
            return [*self._opened("reasoning"), self._delta(event.delta)]
        if isinstance(event, TextMessageContent):
            return [*self._opened("message"), self._delta(event.delta)]
        if isinstance(event, ToolCallStart):
            closed = self._close()
            self._open = _Open(
                "function_call",
                len(self.output),
                self._item_id("function_call"),
                name=event.tool_call_name,
                call_id=event.tool_call_id,
            )
            return [*closed, self._added()]
        if isinstance(event, ToolCallArgs) and self._open and self._open.call_id == event.tool_call_id:
            return [self._delta(event.delta)]
        if isinstance(event, ToolCallEnd) and self._open and self._open.call_id == event.tool_call_id:
            return self._close()
        if isinstance(event, TextMessageEnd) and event.metadata and WORKER_OUTPUT_KEY in event.metadata:
            self.vendor_finish = str(event.metadata[WORKER_OUTPUT_KEY].get("finishReason", "stop"))
        elif isinstance(event, RunFinished | RunError):
            self.usage = response_usage(event)
            self.failed = isinstance(event, RunError)
            if isinstance(event, RunFinished) and event.metadata and MODEL_KEY in event.metadata:
                self.template.model = str(event.metadata[MODEL_KEY])  # a fallback may have answered
        return []

    def first_delta(self, event: AgUiEvent) -> bool:
        """Whether ``event`` is the model's first answer (after it, a failure is a stream event)."""
        return isinstance(event, ReasoningMessageContent | TextMessageContent | ToolCallStart)

    def ended(self, event: RunFinished | RunError) -> list[Event]:
        """The events that end the stream (the open item closed, then the response's last state)."""
        self.take(event)
        closed = self._close()
        final = self.response(event)
        kind = {"completed": "response.completed", "incomplete": "response.incomplete"}
        return [*closed, self._event(kind.get(final.status, "response.failed"), response=final)]

    def opening(self) -> list[Event]:
        """``response.created`` and ``response.in_progress``."""
        start = self.snapshot("in_progress")
        return [
            self._event("response.created", response=start),
            self._event("response.in_progress", response=start),
        ]

    def snapshot(self, status: Any) -> ResponseObject:
        return msgspec.structs.replace(self.template, status=status, output=list(self.output))

    def response(self, end: RunFinished | RunError) -> ResponseObject:
        """The finished response: completed, incomplete (with its reason) or failed (with its error)."""
        self.take(end)
        self._close()
        now = int(time.time())
        if isinstance(end, RunError):
            code = end.code or "provider_other"
            kind: Literal["server_error", "rate_limit_exceeded"] = (
                "rate_limit_exceeded" if code in _RATE_LIMITED else "server_error"
            )
            error = ResponseErrorBody(code=kind, message=f"{end.message} ({code})")
            return msgspec.structs.replace(self.snapshot("failed"), error=error, usage=self.usage)
        reason = _INCOMPLETE.get(self.vendor_finish) if not self._calls() else None
        if reason is not None:
            details = IncompleteDetails(reason=reason)  # type: ignore[arg-type]
            return msgspec.structs.replace(
                self.snapshot("incomplete"), incomplete_details=details, usage=self.usage
            )
        return msgspec.structs.replace(self.snapshot("completed"), completed_at=now, usage=self.usage)

    def _calls(self) -> bool:
        return any(isinstance(item, FunctionCallOut) for item in self.output)

    def _item_id(self, kind: str) -> str:
        return item_id(kind, self.response_hex, f"o{len(self.output)}")

    def _opened(self, kind: str) -> list[Event]:
        if self._open is not None and self._open.kind == kind:
            return []
        closed = self._close()
        self._open = _Open(kind, len(self.output), self._item_id(kind))
        return [*closed, self._added()]

    def _item(self, status: str) -> OutputItem:
        item, text = self._open, "".join(self._open.parts) if self._open else ""
        assert item is not None
        if item.kind == "message":
            final = status != "in_progress"
            content = [OutputText(text=text)] if final else []
            cut = self.failed or self.vendor_finish in _INCOMPLETE
            shown = "incomplete" if final and cut else status
            return OutputMessage(id=item.id, status=shown, content=content)  # type: ignore[arg-type]
        if item.kind == "reasoning":
            summary = [SummaryText(text=text)] if status != "in_progress" else []
            return ReasoningOut(id=item.id, summary=summary, status=status)  # type: ignore[arg-type]
        return FunctionCallOut(
            id=item.id,
            call_id=item.call_id,
            name=item.name,
            arguments=text,
            status=status,  # type: ignore[arg-type]
        )

    def _added(self) -> Event:
        assert self._open is not None
        added = self._event(
            "response.output_item.added", output_index=self._open.index, item=self._item("in_progress")
        )
        if self._open.kind == "message":
            part = self._event("response.content_part.added", **self._at(), part=OutputText(text=""))
            return {**added, "_then": [part]}
        if self._open.kind == "reasoning":
            part = self._event(
                "response.reasoning_summary_part.added", **self._summary_at(), part=SummaryText(text="")
            )
            return {**added, "_then": [part]}
        return added

    def _delta(self, delta: str) -> Event:
        item = self._open
        assert item is not None
        item.parts.append(delta)
        if item.kind == "message":
            return self._event("response.output_text.delta", **self._at(), delta=delta, logprobs=[])
        if item.kind == "reasoning":
            return self._event("response.reasoning_summary_text.delta", **self._summary_at(), delta=delta)
        where = {"item_id": item.id, "output_index": item.index}
        return self._event("response.function_call_arguments.delta", **where, delta=delta)

    def _close(self) -> list[Event]:
        item = self._open
        if item is None:
            return []
        text = "".join(item.parts)
        done: list[Event] = []
        if item.kind == "message":
            done.append(self._event("response.output_text.done", **self._at(), text=text, logprobs=[]))
            done.append(self._event("response.content_part.done", **self._at(), part=OutputText(text=text)))
        elif item.kind == "reasoning":
            at = self._summary_at()
            done.append(self._event("response.reasoning_summary_text.done", **at, text=text))
            done.append(
                self._event("response.reasoning_summary_part.done", **at, part=SummaryText(text=text))
            )
        else:
            where = {"item_id": item.id, "output_index": item.index}
            done.append(self._event("response.function_call_arguments.done", **where, arguments=text))
        finished = self._item("completed")
        done.append(self._event("response.output_item.done", output_index=item.index, item=finished))
        self.output.append(finished)
        self._open = None
        return done

    def _at(self) -> dict[str, Any]:
        assert self._open is not None
        return {"item_id": self._open.id, "output_index": self._open.index, "content_index": 0}

    def _summary_at(self) -> dict[str, Any]:
        assert self._open is not None
        return {"item_id": self._open.id, "output_index": self._open.index, "summary_index": 0}

    def _event(self, kind: str, **fields: Any) -> Event:
        """One stream event, numbered. (An item's first parts are numbered when made, in order.)"""
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event


def _unkept(end: Event) -> Event:
    """The stream's last event for a response that was answered but could not be stored."""
    error = ResponseErrorBody(
        code="server_error", message="The response could not be stored (database_unavailable)."
    )
    failed = msgspec.structs.replace(end["response"], status="failed", completed_at=None, error=error)
    return {**end, "type": "response.failed", "response": failed}


def response_usage(event: RunFinished | RunError) -> ResponseUsage | None:
    """The run's usage in the Responses API's terms (reasoning tokens are part of the output tokens)."""
    if not event.usage:
        return None
    usage = event.usage[0]
    given, made = usage.input_tokens or 0, usage.output_tokens or 0
    return ResponseUsage(
        input_tokens=given,
        input_tokens_details=InputTokensDetails(cached_tokens=usage.cached_input_tokens or 0),
        output_tokens=made,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=usage.reasoning_tokens or 0),
        total_tokens=usage.total_tokens or given + made,
    )


def _flat(events: Iterable[Event]) -> Iterable[Event]:
    for event in events:
        then = event.pop("_then", ())
        yield event
        yield from then


def sse_event(event: Event) -> bytes:
    """``event: <type>`` then ``data: <json>``, as OpenAI sends them."""
    kind: str = event["type"]
    return b"event: " + kind.encode() + b"\ndata: " + msgspec.json.encode(event) + b"\n\n"


async def stream_events(
    draft: ResponseDraft,
    events: AsyncIterator[AgUiEvent],
    *,
    on_end: Callable[[ResponseObject], Any],
    queued: Callable[[], bool] = lambda: False,
) -> AsyncGenerator[bytes, None]:
    """The SSE body: the opening events, one or more per run event, the end. ``on_end`` gets the
    finished response (to store it) before the last event is written. Events already waiting
    (``queued``) go out together, in one write."""
    pending = [sse_event(e) for e in draft.opening()]
    async for event in events:
        if isinstance(event, RunFinished | RunError):
            last = list(_flat(draft.ended(event)))
            try:
                await on_end(last[-1]["response"])
            except Exception:  # answered but not kept: still one terminal event, which says so
                log.exception("a streamed response could not be stored")
                last[-1] = _unkept(last[-1])
            yield LastChunk(b"".join(pending + [sse_event(e) for e in last]))
            return
        pending.extend(sse_event(e) for e in _flat(draft.take(event)))
        if pending and not queued():
            yield b"".join(pending)
            pending = []
