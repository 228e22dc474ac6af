"""One model turn: one provider stream, translated into AG-UI events as it arrives.

Reasoning goes through the turn's :class:`~iris.app.runs.content.reasoning.ReasoningStream`; the answer's text
message opens lazily, once that reasoning is closed; tool calls stream as ``TOOL_CALL_*`` events under
it, and the turn's usage is counted. The stream is paced by the run's deadlines
(:func:`~iris.app.runs.intake.deadlines.paced`) and falls back to inline images when a vendor cannot fetch an
image
URL (:func:`~iris.app.media.pipeline.stream_with_inline_fallback`). What to do with the calls is the tool
loop's (:mod:`iris.app.runs.engine.tool_loop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import msgspec
import uuid_utils

from iris.app.agui.events import (
    AgUiEvent,
    ReasoningMessageContent,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
)
from iris.app.media.pipeline import stream_with_inline_fallback
from iris.app.runs.content.media_prices import media_sent
from iris.app.runs.content.outputs import WORKER_OUTPUT_KEY, WorkerAgentOutput
from iris.app.runs.content.reasoning import ProviderReasoningEvent, ReasoningStream
from iris.app.runs.content.usage import Counts, billable, request_attachment_tokens, request_image_tokens
from iris.app.runs.intake.deadlines import Deadlines, is_progress, paced
from iris.app.runs.intake.fallbacks import AttemptLog, retry_after, retryable_code
from iris.app.runs.intake.plan import RunPlan
from iris.app.runs.store.event_store import EventSink
from iris.app.telemetry import ChatTelemetry, RunTelemetry
from iris.providers import (
    Finish,
    Message,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningOpaque,
    ReasoningStart,
    RequestOptions,
    TextDelta,
    TextPart,
    ToolCallPart,
    Usage,
)
from iris.providers import ToolCallArgs as ProviderToolCallArgs
from iris.providers import ToolCallEnd as ProviderToolCallEnd
from iris.providers import ToolCallStart as ProviderToolCallStart
from iris.providers import Warning as ProviderWarning
from iris.providers.vendor_facts import telemetry_name

log = logging.getLogger("iris.runs")

INTAKE_COMMIT_SECONDS = 0.01
"""How long after a model's request went out its run's intake commit starts at the latest. It starts
sooner, as soon as the first content has gone to the client: on SQLite the commit runs on the loop, and
started with the request it held back the first tokens of a vendor that answers within a millisecond or
two. Any vendor slower than this commits while it thinks, as before."""

# Made once, as in app.runs.intake.deadlines: ``A | B`` in an ``isinstance`` call builds a union per event.
_CONTENT = (TextDelta, ReasoningDelta, ReasoningOpaque, ProviderToolCallStart)
_CONTENT_OUT = (TextMessageContent, ReasoningMessageContent, ToolCallStart)
_REASONING = (ReasoningStart, ReasoningDelta, ReasoningEnd, ReasoningOpaque)


def is_content(event: object) -> bool:
    """Whether an event is the answer's content (text, reasoning, a tool call): the first one is the
    turn's "first chunk"; usage and the finish are progress but not content."""
    return isinstance(event, _CONTENT) and is_progress(event)


Builder = Callable[[bool], Awaitable[Sequence[Message]]]
"""The request's messages, with images by URL (``True``) or inline (``False``)."""


@dataclass(slots=True)
class Turn:
    """What one model turn produced. Its text message opens lazily, once its reasoning is closed."""

    message_id: str
    reasoning: ReasoningStream
    text: list[str] = field(default_factory=list)
    calls: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    finish_reason: str = "stop"
    stop_sequence: str | None = None
    counts: Counts = field(default_factory=Counts)
    text_open: bool = False

    @property
    def answer(self) -> str:
        return "".join(self.text)

    def arguments(self, call_id: str) -> str:
        return "".join(self.calls[call_id][1])


class ModelTurns:
    """Streams a run's model turns into its sink, one at a time, and knows what a dropped one left open."""

    def __init__(
        self,
        plan: RunPlan,
        store: EventSink,
        deadlines: Deadlines,
        telemetry: RunTelemetry,
        attempts: AttemptLog,
    ) -> None:
        self.plan = plan
        self.store = store
        self._deadlines = deadlines
        self._telemetry = telemetry
        self._attempts = attempts
        self._open_turn: Turn | None = None
        self._open_calls: set[str] = set()
        self._intake_timer: asyncio.TimerHandle | None = None
        self._intake_started = False
        self.emitted = 0
        """Events these turns emitted so far."""

    async def stream(self, build: Builder, options: RequestOptions, by_url: bool) -> Turn:
        """One turn: the provider's stream of this request, its events emitted as they arrive, each
        request inside its own ``chat {model}`` span (the vendor's HTTP request and the intake commit
        are its children). A retryable failure before the turn emitted anything is tried again on the
        same model, within its retry policy and the first-token deadline
        (:mod:`iris.app.runs.intake.fallbacks`)."""
        plan = self.plan
        loop = asyncio.get_running_loop()
        started = loop.time()
        tries = 0
        while True:
            reasoning = ReasoningStream(provider=plan.provider.id)
            turn = Turn(message_id=str(uuid_utils.uuid7()), reasoning=reasoning)
            self._open_turn = turn
            before = self.emitted
            tries += 1
            try:
                await self._attempt(turn, build, options, by_url)
                break
            except Exception as exc:
                code = retryable_code(exc)
                if code is None or self.emitted != before:
                    raise  # not worth trying again, or content already reached the client
                self._open_turn = None
                await self._attempts.failed(plan.model_ref, code)
                delay = plan.retry.delay(tries, retry_after(exc))
                late = loop.time() - started + delay > self._deadlines.first_token
                if tries >= plan.retry.attempts or late:
                    raise
                log.info("run %s: %s failed: %s; retry in %.2f s", plan.run_id, plan.model_ref, code, delay)
                self._telemetry.telemetry.record_retry(plan.model_ref, code)
                await asyncio.sleep(delay)
        for call_id in sorted(self._open_calls):  # a vendor that never closed a call: close it first
            await self._emit(ToolCallEnd(tool_call_id=call_id))
        self._open_calls.clear()
        await self._end_message(turn)
        return turn

    async def _attempt(self, turn: Turn, build: Builder, options: RequestOptions, by_url: bool) -> None:
        """One request of the turn, in its ``chat {model}`` span (an error status when it fails)."""
        plan = self.plan
        with self._telemetry.chat(
            provider_name=telemetry_name(plan.provider), model_id=plan.model.model_id
        ) as chat:
            await self._stream(turn, chat, build, options, by_url)
            chat.usage(
                input=turn.counts.input_tokens,
                output=turn.counts.output_tokens,
                reasoning=turn.counts.reasoning_tokens,
                cached=turn.counts.cached_input_tokens,
                image=turn.counts.image_tokens,
            )
            chat.finished(
                turn.finish_reason,
                answer=turn.answer,
                calls=[(call_id, name, turn.arguments(call_id)) for call_id, (name, _) in turn.calls.items()],
            )

    async def _emit(self, event: AgUiEvent) -> None:
        """Every event of the turns goes out here: ``emitted`` counts them (content that reached the
        client forbids a retry or a fallback)."""
        self.emitted += 1
        await self.store.emit(event)
        if not self._intake_started and isinstance(event, _CONTENT_OUT):
            self._commit_intake()  # the client has this first content already (EventStore.emit)

    def _commit_intake(self) -> None:
        """Start the run's intake commit (once; see :data:`INTAKE_COMMIT_SECONDS`)."""
        self._intake_started = True
        if self._intake_timer is not None:
            self._intake_timer.cancel()
        self.store.commit_intake()

    async def _stream(
        self, turn: Turn, chat: ChatTelemetry, build: Builder, options: RequestOptions, by_url: bool
    ) -> None:
        plan = self.plan

        async def measured(url: bool) -> Sequence[Message]:
            messages = await build(url)
            turn.counts.estimated_image_tokens = request_image_tokens(messages, plan.provider, plan.model)
            (
                turn.counts.estimated_document_tokens,
                turn.counts.estimated_audio_tokens,
            ) = request_attachment_tokens(messages, plan.provider)
            turn.counts.media = media_sent(messages)  # what the media prices apply to (the last build)
            chat.request(messages, options.system)
            if not self._intake_started and self._intake_timer is None:  # while the vendor thinks
                loop = asyncio.get_running_loop()
                self._intake_timer = loop.call_later(INTAKE_COMMIT_SECONDS, self._commit_intake)
            return messages

        stream = paced(
            stream_with_inline_fallback(plan.provider, plan.model, options, measured, by_url=by_url),
            self._deadlines,
        )
        async with contextlib.aclosing(stream):
            async for event in stream:
                if isinstance(event, TextDelta):  # nearly every event: the answer's text, tested first
                    if event.delta:
                        chat.first_chunk()
                    if not turn.text_open:
                        await self._open_text(turn)
                    if event.delta:
                        turn.text.append(event.delta)
                        await self._emit(TextMessageContent(message_id=turn.message_id, delta=event.delta))
                    continue
                if is_content(event):
                    chat.first_chunk()
                if isinstance(event, _REASONING):
                    await self._reasoning(turn, event)
                elif isinstance(event, ProviderToolCallStart):
                    await self._open_text(turn)
                    turn.calls[event.id] = (event.name, [])
                    self._open_calls.add(event.id)
                    await self._emit(
                        ToolCallStart(
                            tool_call_id=event.id,
                            tool_call_name=event.name,
                            parent_message_id=turn.message_id,
                        )
                    )
                elif isinstance(event, ProviderToolCallArgs) and event.id in self._open_calls:
                    turn.calls[event.id][1].append(event.delta)
                    await self._emit(ToolCallArgs(tool_call_id=event.id, delta=event.delta))
                elif isinstance(event, ProviderToolCallEnd) and event.id in self._open_calls:
                    self._open_calls.discard(event.id)
                    await self._emit(ToolCallEnd(tool_call_id=event.id))
                elif isinstance(event, Usage):
                    turn.counts.report(event)
                elif isinstance(event, Finish):
                    turn.finish_reason, turn.stop_sequence = event.reason, event.stop_sequence
                elif isinstance(event, ProviderWarning):
                    log.info("run %s: %s warning: %s", plan.run_id, plan.provider.id, event.message)

    async def close_dropped(self) -> None:
        """Close what the dropped turn left open; its partial answer is kept. A turn that had streamed
        nothing yet (a silent vendor) ends without a message: no message without content."""
        for call_id in sorted(self._open_calls):
            await self._emit(ToolCallEnd(tool_call_id=call_id))
        self._open_calls.clear()
        turn, self._open_turn = self._open_turn, None
        if turn is None:
            return
        turn.finish_reason = "cancelled"
        if turn.text_open or turn.reasoning.is_open or turn.reasoning.parts:
            await self._end_message(turn)

    async def _reasoning(self, turn: Turn, event: ProviderReasoningEvent) -> None:
        for out in turn.reasoning.translate(event):
            await self._emit(out)

    async def _open_text(self, turn: Turn) -> None:
        """The answer's message opens once, after the turn's reasoning so far is closed."""
        if turn.text_open:
            return
        for out in turn.reasoning.close():
            await self._emit(out)
        turn.text_open = True
        await self._emit(TextMessageStart(message_id=turn.message_id, role="assistant"))

    async def _end_message(self, turn: Turn) -> None:
        await self._open_text(turn)
        plan = self.plan
        worker = WorkerAgentOutput(
            answer=turn.answer,
            model=plan.model.model_id,
            provider=plan.provider.id,
            finish_reason=turn.finish_reason,
            stop_sequence=turn.stop_sequence,
            tool_call_ids=list(turn.calls),
            usage=billable(turn.counts, provider=plan.provider.id, model=plan.model),
            reasoning_summary=turn.reasoning.summary,
            reasoning_tokens=turn.counts.reasoning_tokens,
            agent=plan.agent,
        )
        self._open_turn = None
        await self._emit(
            TextMessageEnd(
                message_id=turn.message_id, metadata={WORKER_OUTPUT_KEY: msgspec.to_builtins(worker)}
            )
        )


def assistant_message(turn: Turn) -> Message:
    """A turn that called tools, as the next turn is told it: its reasoning (sent back unchanged on the
    tool-use continuation), its text and its calls."""
    return Message(
        role="assistant",
        parts=(
            *turn.reasoning.parts,
            *((TextPart(text=turn.answer),) if turn.answer else ()),
            *(
                ToolCallPart(id=call_id, name=name, arguments=turn.arguments(call_id))
                for call_id, (name, _) in turn.calls.items()
            ),
        ),
    )
