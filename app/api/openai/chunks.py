"""A stateless run's AG-UI events → OpenAI's answers: ``chat.completion.chunk``s as they come (then
``data: [DONE]``), or one ``chat.completion`` at the end.

Text is ``delta.content``, reasoning ``delta.reasoning_content`` (as DeepSeek, vLLM and LiteLLM send it),
each tool call a ``delta.tool_calls`` entry (its index, id and name first, then argument fragments).
``usage`` counts all of the run's turns; with ``stream_options.include_usage`` it comes in one last
chunk whose ``choices`` is empty, as OpenAI sends it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import get_args

import msgspec

from iris.app.agui.events import (
    TERMINAL_EVENTS,
    AgUiEvent,
    ReasoningMessageContent,
    RunError,
    RunFinished,
    TextMessageContent,
    TextMessageEnd,
    ToolCallArgs,
    ToolCallStart,
)
from iris.app.agui.sse import LastChunk
from iris.app.api.openai.wire import (
    AssistantAnswer,
    ChatCompletion,
    ChatCompletionChunk,
    Choice,
    ChunkChoice,
    CompletionTokensDetails,
    CompletionUsage,
    Delta,
    FinishReason,
    FunctionDelta,
    OpenAIFunctionCallOut,
    OpenAIToolCallOut,
    PromptTokensDetails,
    ToolCallDelta,
)
from iris.app.runs import MODEL_KEY, WORKER_OUTPUT_KEY

_FINISH_REASONS: tuple[str, ...] = get_args(FinishReason)


@dataclass(slots=True)
class Answer:
    """What the run said so far, gathered from its events."""

    completion_id: str
    model: str
    created: int = field(default_factory=lambda: int(time.time()))
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[str, tuple[int, str, list[str]]] = field(default_factory=dict)
    vendor_finish: str = "stop"
    usage: CompletionUsage | None = None

    @property
    def finish_reason(self) -> FinishReason:
        if self.calls:
            return "tool_calls"
        reason = self.vendor_finish
        return reason if reason in _FINISH_REASONS else "stop"  # type: ignore[return-value]

    def take(self, event: AgUiEvent) -> Delta | None:
        """Note ``event``; the delta a stream sends for it, if any."""
        if isinstance(event, TextMessageContent):
            self.text.append(event.delta)
            return Delta(content=event.delta)
        if isinstance(event, ReasoningMessageContent):
            self.reasoning.append(event.delta)
            return Delta(reasoning_content=event.delta)
        if isinstance(event, ToolCallStart):
            index = len(self.calls)
            self.calls[event.tool_call_id] = (index, event.tool_call_name, [])
            call = ToolCallDelta(
                index=index,
                id=event.tool_call_id,
                type="function",
                function=FunctionDelta(name=event.tool_call_name, arguments=""),
            )
            return Delta(tool_calls=[call])
        if isinstance(event, ToolCallArgs) and event.tool_call_id in self.calls:
            index, _, fragments = self.calls[event.tool_call_id]
            fragments.append(event.delta)
            return Delta(
                tool_calls=[ToolCallDelta(index=index, function=FunctionDelta(arguments=event.delta))]
            )
        if isinstance(event, TextMessageEnd) and event.metadata and WORKER_OUTPUT_KEY in event.metadata:
            self.vendor_finish = str(event.metadata[WORKER_OUTPUT_KEY].get("finishReason", "stop"))
        elif isinstance(event, TERMINAL_EVENTS):
            self.usage = completion_usage(event)
            if isinstance(event, RunFinished) and event.metadata and MODEL_KEY in event.metadata:
                self.model = str(event.metadata[MODEL_KEY])  # a fallback may have answered
        return None

    def chunk(self, delta: Delta, finish: FinishReason | None = None) -> ChatCompletionChunk:
        return ChatCompletionChunk(
            id=self.completion_id,
            created=self.created,
            model=self.model,
            choices=[ChunkChoice(index=0, delta=delta, finish_reason=finish)],
        )

    def completion(self) -> ChatCompletion:
        calls = [
            OpenAIToolCallOut(
                id=call_id, function=OpenAIFunctionCallOut(name=name, arguments="".join(fragments))
            )
            for call_id, (_, name, fragments) in self.calls.items()
        ]
        message = AssistantAnswer(
            content="".join(self.text) if self.text or not calls else None,
            tool_calls=calls or None,
            reasoning_content="".join(self.reasoning) or None,
        )
        return ChatCompletion(
            id=self.completion_id,
            created=self.created,
            model=self.model,
            choices=[Choice(index=0, message=message, finish_reason=self.finish_reason)],
            usage=self.usage,
        )


def completion_usage(event: RunFinished | RunError) -> CompletionUsage | None:
    """The run's usage in OpenAI's terms (reasoning tokens are part of the completion tokens)."""
    if not event.usage:
        return None
    usage = event.usage[0]
    prompt, completion = usage.input_tokens or 0, usage.output_tokens or 0
    return CompletionUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=usage.total_tokens or prompt + completion,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=usage.cached_input_tokens or 0),
        completion_tokens_details=CompletionTokensDetails(reasoning_tokens=usage.reasoning_tokens or 0),
    )


def sse(value: msgspec.Struct) -> bytes:
    return b"data: " + msgspec.json.encode(value) + b"\n\n"


async def stream_chunks(
    answer: Answer,
    events: AsyncIterator[AgUiEvent],
    *,
    include_usage: bool,
    error: Callable[[RunError], msgspec.Struct],
    queued: Callable[[], bool] = lambda: False,
) -> AsyncGenerator[bytes, None]:
    """The SSE body: a first chunk naming the role, one chunk per delta, the finish, optionally the
    usage, then ``[DONE]``; a run that fails ends the stream with an ``{"error": …}`` chunk instead
    (the SDKs raise it). ``error`` builds that chunk from the ``RunError``. The chunks of events that
    ``queued`` says are already waiting go out together, in one write (a vendor's burst)."""
    pending = [sse(answer.chunk(Delta(role="assistant", content="")))]
    async for event in events:
        delta = answer.take(event)
        if delta is not None:
            pending.append(sse(answer.chunk(delta)))
        elif isinstance(event, RunError):
            pending.append(sse(error(event)))
            yield LastChunk(b"".join(pending))
            return
        elif isinstance(event, RunFinished):
            pending.append(sse(answer.chunk(Delta(), answer.finish_reason)))
            if include_usage:
                usage = ChatCompletionChunk(
                    id=answer.completion_id,
                    created=answer.created,
                    model=answer.model,
                    choices=[],
                    usage=answer.usage,
                )
                pending.append(sse(usage))
            pending.append(b"data: [DONE]\n\n")
            yield LastChunk(b"".join(pending))  # written with the body's end (EventStream)
            return
        if pending and not queued():
            yield b"".join(pending)
            pending = []
