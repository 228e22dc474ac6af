"""A stateless run's AG-UI events → Anthropic's answers: the stream's events as they come
(``message_start``, ``content_block_start``/``delta``/``stop``, ``message_delta``, ``message_stop``), or
one ``message`` at the end.

Text is a ``text`` block, reasoning a ``thinking`` block whose ``signature`` arrives as a
``signature_delta`` before it stops (a redacted span is one ``redacted_thinking`` block), and each tool
call a ``tool_use`` block whose input arrives as ``input_json_delta`` pieces. ``usage`` counts all of
the run's turns and is known at the end only, so it rides on ``message_delta``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field

import msgspec

from iris.app.agui.events import (
    AgUiEvent,
    ReasoningEncryptedValue,
    ReasoningEnd,
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
from iris.app.api.anthropic.wire import (
    AnthropicContentBlock,
    AnthropicContentBlockDelta,
    AnthropicContentBlockStart,
    AnthropicContentBlockStop,
    AnthropicDeltaUsage,
    AnthropicInputJsonDelta,
    AnthropicMessage,
    AnthropicMessageDelta,
    AnthropicMessageStart,
    AnthropicMessageStop,
    AnthropicPing,
    AnthropicRedactedThinkingBlock,
    AnthropicSignatureDelta,
    AnthropicStopDelta,
    AnthropicStopReason,
    AnthropicStreamEvent,
    AnthropicTextBlock,
    AnthropicTextDelta,
    AnthropicThinkingBlock,
    AnthropicThinkingDelta,
    AnthropicToolUseBlock,
    AnthropicUsage,
)
from iris.app.runs import MODEL_KEY, REASONING_KIND_KEY, WORKER_OUTPUT_KEY

_STOP_REASONS: dict[str, AnthropicStopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


@dataclass(slots=True)
class _Block:
    """One content block as it grows: its kind, its id in the run, and its pieces."""

    block: AnthropicContentBlock
    key: str
    pieces: list[str] = field(default_factory=list)
    signature: str = ""


@dataclass(slots=True)
class Answer:
    """What the run said so far, gathered from its events, and the stream events each one makes."""

    message_id: str
    model: str
    blocks: list[_Block] = field(default_factory=list)
    open: _Block | None = None
    vendor_finish: str = "stop"
    stop_sequence: str | None = None
    """The request's stop sequence that ended the answer, when the vendor said which."""
    usage: AnthropicUsage = field(default_factory=lambda: AnthropicUsage(input_tokens=0, output_tokens=0))

    @property
    def stop_reason(self) -> AnthropicStopReason:
        if any(isinstance(b.block, AnthropicToolUseBlock) for b in self.blocks):
            return "tool_use"
        if self.vendor_finish == "stop" and self.stop_sequence is not None:
            return "stop_sequence"
        return _STOP_REASONS.get(self.vendor_finish, "end_turn")

    @property
    def _stopped_by(self) -> str | None:
        return self.stop_sequence if self.stop_reason == "stop_sequence" else None

    def take(self, event: AgUiEvent) -> list[AnthropicStreamEvent]:
        """Note ``event``; the stream events it makes (none for most)."""
        if isinstance(event, TextMessageContent):
            return self._piece("text", event.message_id, event.delta)
        if isinstance(event, ReasoningMessageContent):
            return self._piece("thinking", event.message_id, event.delta)
        if isinstance(event, ReasoningEncryptedValue) and event.subtype == "message":
            return self._opaque(event)
        if (
            isinstance(event, ReasoningEnd)
            and self.open is not None
            and isinstance(self.open.block, AnthropicThinkingBlock)
        ):
            return self._stop()
        if isinstance(event, ToolCallStart):
            block = AnthropicToolUseBlock(id=event.tool_call_id, name=event.tool_call_name, input={})
            return [*self._stop(), *self._start(block, event.tool_call_id)]
        if isinstance(event, ToolCallArgs) and self.open is not None and self.open.key == event.tool_call_id:
            self.open.pieces.append(event.delta)
            return [self._delta(AnthropicInputJsonDelta(partial_json=event.delta))]
        if isinstance(event, ToolCallEnd):
            return self._stop()
        if isinstance(event, TextMessageEnd):
            if event.metadata and WORKER_OUTPUT_KEY in event.metadata:
                output = event.metadata[WORKER_OUTPUT_KEY]
                self.vendor_finish = str(output.get("finishReason", "stop"))
                self.stop_sequence = output.get("stopSequence")
            return self._stop() if self.open is not None and self.open.key == event.message_id else []
        if isinstance(event, RunFinished | RunError):
            self.usage = run_usage(event) or self.usage
            if isinstance(event, RunFinished) and event.metadata and MODEL_KEY in event.metadata:
                self.model = str(event.metadata[MODEL_KEY])  # a fallback may have answered
            return self._stop() if isinstance(event, RunFinished) else []  # a failure: the error alone
        return []

    def _piece(self, kind: str, key: str, piece: str) -> list[AnthropicStreamEvent]:
        out: list[AnthropicStreamEvent] = []
        if self.open is None or self.open.key != key:
            out += self._stop()
            block: AnthropicContentBlock = (
                AnthropicTextBlock(text="")
                if kind == "text"
                else AnthropicThinkingBlock(thinking="", signature="")
            )
            out += self._start(block, key)
        assert self.open is not None
        self.open.pieces.append(piece)
        delta = AnthropicTextDelta(text=piece) if kind == "text" else AnthropicThinkingDelta(thinking=piece)
        return [*out, self._delta(delta)]

    def _opaque(self, event: ReasoningEncryptedValue) -> list[AnthropicStreamEvent]:
        """A signature closes its thinking block (one with no text gets a block of its own); redacted
        reasoning is a block of its own, whole at its start."""
        if (event.metadata or {}).get(REASONING_KIND_KEY) == "redacted":
            block = AnthropicRedactedThinkingBlock(data=event.encrypted_value)
            return [*self._stop(), *self._start(block, event.entity_id), *self._stop()]
        out: list[AnthropicStreamEvent] = []
        if self.open is None or not isinstance(self.open.block, AnthropicThinkingBlock):
            out += self._stop()
            out += self._start(AnthropicThinkingBlock(thinking="", signature=""), event.entity_id)
        assert self.open is not None
        self.open.signature = event.encrypted_value
        return [*out, self._delta(AnthropicSignatureDelta(signature=event.encrypted_value))]

    def _start(self, block: AnthropicContentBlock, key: str) -> list[AnthropicStreamEvent]:
        self.open = _Block(block=block, key=key)
        self.blocks.append(self.open)
        return [AnthropicContentBlockStart(index=len(self.blocks) - 1, content_block=block)]

    def _delta(
        self,
        delta: AnthropicTextDelta
        | AnthropicThinkingDelta
        | AnthropicSignatureDelta
        | AnthropicInputJsonDelta,
    ) -> AnthropicContentBlockDelta:
        return AnthropicContentBlockDelta(index=len(self.blocks) - 1, delta=delta)

    def _stop(self) -> list[AnthropicStreamEvent]:
        if self.open is None:
            return []
        self.open = None
        return [AnthropicContentBlockStop(index=len(self.blocks) - 1)]

    def started(self) -> AnthropicMessageStart:
        empty = AnthropicUsage(input_tokens=0, output_tokens=0)
        return AnthropicMessageStart(message=self._message([], None, empty))

    def ended(self) -> list[AnthropicStreamEvent]:
        usage = self.usage
        return [
            AnthropicMessageDelta(
                delta=AnthropicStopDelta(stop_reason=self.stop_reason, stop_sequence=self._stopped_by),
                usage=AnthropicDeltaUsage(
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cache_creation_input_tokens=usage.cache_creation_input_tokens,
                    cache_read_input_tokens=usage.cache_read_input_tokens,
                ),
            ),
            AnthropicMessageStop(),
        ]

    def message(self) -> AnthropicMessage:
        return self._message([_finished(b) for b in self.blocks], self.stop_reason, self.usage)

    def _message(
        self, content: list[AnthropicContentBlock], stop: AnthropicStopReason | None, usage: AnthropicUsage
    ) -> AnthropicMessage:
        return AnthropicMessage(
            id=self.message_id,
            role="assistant",
            content=content,
            model=self.model,
            stop_reason=stop,
            stop_sequence=self._stopped_by if stop is not None else None,
            usage=usage,
        )


def _finished(block: _Block) -> AnthropicContentBlock:
    whole = "".join(block.pieces)
    if isinstance(block.block, AnthropicTextBlock):
        return AnthropicTextBlock(text=whole)
    if isinstance(block.block, AnthropicThinkingBlock):
        return AnthropicThinkingBlock(thinking=whole, signature=block.signature)
    if isinstance(block.block, AnthropicToolUseBlock):
        try:
            arguments = json.loads(whole) if whole.strip() else {}
        except json.JSONDecodeError:
            arguments = {}
        return AnthropicToolUseBlock(
            id=block.block.id, name=block.block.name, input=arguments if isinstance(arguments, dict) else {}
        )
    return block.block


def run_usage(event: RunFinished | RunError) -> AnthropicUsage | None:
    """The run's usage in Anthropic's terms: ``input_tokens`` without the ones read from the cache."""
    if not event.usage:
        return None
    usage = event.usage[0]
    total_in, cached = usage.input_tokens or 0, usage.cached_input_tokens or 0
    return AnthropicUsage(
        input_tokens=max(total_in - cached, 0),
        output_tokens=usage.output_tokens or 0,
        cache_creation_input_tokens=0,
        cache_read_input_tokens=cached,
    )


def frame(event: msgspec.Struct) -> bytes:
    """One SSE frame as Anthropic writes it: ``event:`` names the ``type`` the data repeats."""
    data = msgspec.json.encode(event)
    name = event.__struct_config__.tag
    return b"event: " + str(name).encode() + b"\ndata: " + data + b"\n\n"


async def stream_events(
    answer: Answer,
    events: AsyncIterator[AgUiEvent],
    *,
    error: Callable[[RunError], msgspec.Struct],
    queued: Callable[[], bool] = lambda: False,
) -> AsyncGenerator[bytes, None]:
    """The SSE body: ``message_start`` and a ``ping``, the blocks' events, then ``message_delta`` and
    ``message_stop``; a run that fails ends the stream with one ``error`` event instead. The frames of
    events that ``queued`` says are already waiting go out together, in one write (a vendor's burst)."""
    pending = [frame(answer.started()), frame(AnthropicPing())]
    async for event in events:
        pending += [frame(e) for e in answer.take(event)]
        if isinstance(event, RunError):
            pending.append(frame(error(event)))
            yield LastChunk(b"".join(pending))
            return
        if isinstance(event, RunFinished):
            pending += [frame(e) for e in answer.ended()]
            yield LastChunk(b"".join(pending))  # written with the body's end (EventStream)
            return
        if pending and not queued():
            yield b"".join(pending)
            pending = []
