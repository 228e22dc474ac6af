"""The event store: the only writer of a run's results (SPEC §6, seed 000 §5).

Every event of a run passes through :meth:`EventStore.emit`, which numbers it, hands it to the live
streams and appends it to ``run_events`` in batches. The structured outputs in event metadata are
validated here, and the messages they describe are written when the run ends — all of them in the
transaction that records the terminal event:

- ``TEXT_MESSAGE_END`` + ``iris/workerAgentOutput`` → an ``assistant`` row, ``content = answer``,
  ``metadata.worker_agent_output``, and as parts the reasoning streamed since the previous answer
  (``REASONING_MESSAGE_*`` text, ``REASONING_ENCRYPTED_VALUE`` opaque blocks kept for replay) and the
  tool calls it made (from ``TOOL_CALL_*``);
- ``TOOL_CALL_RESULT`` + ``iris/toolAgentOutput`` → a ``tool`` row, ``content = resultSummary``,
  ``metadata.tool_agent_output``;
- ``RUN_ERROR`` → no message rows at all; the run row says ``failed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from uuid import UUID

import msgspec
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from iris.app.agui.events import (
    OPENING_EVENTS,
    TERMINAL_EVENTS,
    AgUiEvent,
    CancelledOutcome,
    InterruptOutcome,
    ReasoningEncryptedValue,
    ReasoningMessageContent,
    ReasoningMessageStart,
    RunError,
    RunFinished,
    TextMessageEnd,
    ToolCallArgs,
    ToolCallResult,
    ToolCallStart,
    encode_event,
)
from iris.app.persistence.db import session_scope
from iris.app.persistence.repositories import AnswerMessage, ClosingRows, RunEventRepository, RunRepository
from iris.app.persistence.repositories.closing_rows import AuditRow
from iris.app.runs.content.outputs import (
    TOOL_OUTPUT_KEY,
    WORKER_OUTPUT_KEY,
    ToolAgentOutput,
    WorkerAgentOutput,
)
from iris.app.runs.content.reasoning import REASONING_KIND_KEY
from iris.app.runs.content.usage import USAGE_KEY
from iris.app.runs.store.live import RunChannel
from iris.app.storage.signing import without_urls

log = logging.getLogger("iris.runs")

T = TypeVar("T")

BATCH_EVENTS = 256
BATCH_SECONDS = 0.25
MAX_UNLOGGED = BATCH_EVENTS + 1
"""The most events of a run that can have been streamed but not logged: a full batch whose write
failed (the run then ends at once), and the terminal event sent when even that could not be recorded.
A run failed by the crash sweep gets a terminal id above all of them (ids never go backwards)."""


class EventSink(Protocol):
    """Where an orchestrator sends a run's events: the :class:`EventStore`, or a stateless run's."""

    @property
    def finished(self) -> bool: ...

    async def emit(self, event: AgUiEvent) -> None: ...

    def abandon(self, event: RunError) -> None: ...

    def commit_intake(self) -> None:
        """Start committing the run's intake (once). Called when the model's request is about to go out,
        so the commit overlaps the vendor's latency, or before a tool writes through its own session."""
        ...

    async def intake_settled(self) -> None:
        """Wait until the run's intake is committed or failed (nothing to wait for when nothing is stored)."""
        ...

    def audit(self, row: AuditRow) -> None:
        """Keep an audit log row (an approval answered, a tool call made) for the run's closing write."""
        ...


class RunLost(Exception):
    """The crash sweep failed this run (its heartbeat stopped too long): nothing more is recorded."""


class IntakeNotStored(Exception):
    """The run's intake (its new messages and run row) could not be committed: nothing is stored."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class InvalidOutput(Exception):
    """A structured output failed its schema: a bug in the producer, reported as ``RUN_ERROR``."""


@dataclass(slots=True)
class _ToolCall:
    name: str
    parent: str | None
    arguments: list[str] = field(default_factory=list)


class EventStore:
    """Numbers, publishes and persists one run's events; see the module docstring."""

    def __init__(
        self,
        alchemy: SQLAlchemyAsyncConfig,
        *,
        run_pk: UUID,
        session_pk: UUID,
        parent_pk: UUID | None = None,
        channel: RunChannel,
        batch_seconds: float = BATCH_SECONDS,
        intake: Callable[[], asyncio.Future[None]] | None = None,
    ) -> None:
        self._alchemy = alchemy
        self._start_intake = intake
        self._intake: asyncio.Future[None] | None = None
        self._batch_seconds = batch_seconds
        self._run_pk = run_pk
        self._session_pk = session_pk
        self._parent_pk = parent_pk  # the active line's end when the run started: its answers follow it
        self.channel = channel
        self.sequence = 0
        self.finished = False
        self._buffer: list[tuple[int, msgspec.Raw]] = []  # the JSON as streamed, stored as is
        self._flushed_at = time.monotonic()
        self._rows: list[AnswerMessage] = []
        self._calls: dict[str, _ToolCall] = {}
        self._reasoning: dict[str, dict[str, Any]] = {}  # this answer's reasoning parts, by entity id
        self._writing: asyncio.Future[None] | None = None  # the batch being appended
        self._in_flight = 0  # its events
        self._unrecorded: RunError | None = None
        self._audit: list[AuditRow] = []

    async def emit(self, event: AgUiEvent) -> None:
        """Validate, number, publish and buffer one event; a terminal one is persisted before it is sent."""
        if self.finished:
            raise RuntimeError("the run already ended")
        self._track(event)
        self.sequence += 1
        payload = encode_event(event)
        self._buffer.append((self.sequence, msgspec.Raw(payload)))
        if isinstance(event, TERMINAL_EVENTS):
            try:
                await self._finish(event)
            except BaseException:
                # Not recorded, so not sent: the caller reports a RUN_ERROR instead.
                self._buffer.pop()
                self.sequence -= 1
                raise
            self._buffer.clear()
            self._close((self.sequence, payload))
            return
        turn = self.channel.publish((self.sequence, payload), urgent=not isinstance(event, OPENING_EVENTS))
        if self._writing is not None and self._writing.done():
            await self._settled()  # a batch that failed ends the run here, its events kept to record
        if len(self._buffer) + self._in_flight >= BATCH_EVENTS:
            await self.flush()
            await asyncio.sleep(0)  # a burst (a fast vendor, SQLite written inline) lets the loop serve
            return
        if self._writing is None and time.monotonic() - self._flushed_at >= self._batch_seconds:
            self._start_batch()
        if turn:
            await asyncio.sleep(0)  # a waiting stream sends it now (RunChannel.publish)

    def abandon(self, event: RunError) -> None:
        """When even a failure cannot be recorded: tell the live streams now, and keep the unlogged events
        and this ending for :meth:`record_abandoned` (the log must end the way the client saw it)."""
        self.commit_intake()  # never left open: committed (the keeper then records the end) or rolled back
        self.sequence += 1
        payload = encode_event(event)
        self._buffer.append((self.sequence, msgspec.Raw(payload)))
        intake_lost = (
            self._intake is not None and self._intake.done() and self._intake.exception() is not None
        )
        self._unrecorded = None if intake_lost else event  # a run never stored has no log to end
        self._close((self.sequence, payload))

    @property
    def unrecorded(self) -> bool:
        """The run ended (live) with an ending that is not in the database yet."""
        return self._unrecorded is not None

    async def record_abandoned(self) -> None:
        """Write the abandoned ending and the events before it, with the ids they were streamed with.

        Raises :class:`RunLost` when the crash sweep failed the run meanwhile (then its ending stands).
        """
        if self._unrecorded is None:
            return
        with contextlib.suppress(Exception):  # a batch still in flight lands, or its events come back
            await self._settled()
        try:
            await self._intake_stored()
        except IntakeNotStored:  # the run was never stored: there is no log to end
            self._unrecorded = None
            self._buffer = []
            return
        await self._record(self._unrecorded, self._buffer)
        self._unrecorded = None
        self._buffer = []

    def _close(self, frame: tuple[int, bytes]) -> None:
        self.finished = True
        self.channel.publish(frame)
        self.channel.close()

    async def flush(self) -> None:
        """Append buffered events in one short transaction (re-attaching streams read them), after the
        batch in flight, if any, and wait for both.

        A batch due by time goes out without the run waiting for it (``emit``): at most one at a time,
        and what comes meanwhile waits for the next. A run that waited for each batch turned a database
        slowed by many runs into one transaction per event once its events came slower than
        ``batch_seconds`` apart, which slowed the database further: 500 runs at once took 70 s instead
        of 6. Writes are shielded: a cancel arriving meanwhile must not lose a batch that was already
        sent live, or the log would have a gap.
        """
        await self._settled()
        self._start_batch()
        await self._settled()

    def _start_batch(self) -> None:
        """Start appending the buffered events, now in flight (streamed, not logged: at most
        BATCH_EVENTS), as a task of their own that a cancel of the run does not stop."""
        events, self._buffer = self._buffer, []
        self._in_flight = len(events)
        self._writing = asyncio.ensure_future(self._append(events))
        self._writing.add_done_callback(_retrieved)  # raised by _settled, or by nobody if the run ended

    async def _settled(self) -> None:
        """Wait for the batch in flight; raises its failure, once (its events are back in the buffer, so
        the terminal write that follows still records them)."""
        if self._writing is not None:
            try:
                await asyncio.shield(self._writing)
            finally:
                if self._writing.done():  # not when this wait was cancelled: the write goes on
                    self._writing = None

    def audit(self, row: AuditRow) -> None:
        """Keep ``row`` for the closing write (:class:`EventSink`)."""
        self._audit.append(row)

    def commit_intake(self) -> None:
        """Start committing the run's intake (once); see :class:`EventSink`."""
        if self._intake is None and self._start_intake is not None:
            self._intake = self._start_intake()
            self._intake.add_done_callback(_retrieved)  # its failure is reported by the run, or not needed

    async def intake_settled(self) -> None:
        """Wait until the run's intake is committed, or failed to be (starting the commit if it has not
        started): what a reader of the thread needs before it can see the run's input."""
        with contextlib.suppress(Exception):
            await self._intake_stored()

    async def _intake_stored(self) -> None:
        """Write nothing before the run's intake is committed (raises IntakeNotStored if it was not);
        a run that ends before calling the model commits it here."""
        self.commit_intake()
        if self._intake is not None:
            await asyncio.shield(self._intake)

    async def _append(self, events: list[tuple[int, msgspec.Raw]]) -> None:
        try:
            await self._intake_stored()
            async with session_scope(self._alchemy) as db:
                await RunEventRepository(session=db).append_batch(self._run_pk, events)
        except BaseException:
            self._buffer[:0] = events  # streamed already: they must still reach the log, in order
            raise
        else:
            self._flushed_at = time.monotonic()  # the next batch is due batch_seconds after this landed
        finally:
            self._in_flight = 0

    def _track(self, event: AgUiEvent) -> None:
        if isinstance(event, ToolCallStart):
            self._calls[event.tool_call_id] = _ToolCall(
                name=event.tool_call_name, parent=event.parent_message_id
            )
        elif isinstance(event, ToolCallArgs) and event.tool_call_id in self._calls:
            self._calls[event.tool_call_id].arguments.append(event.delta)
        elif isinstance(event, ReasoningMessageStart):
            self._reasoning[event.message_id] = {"type": "reasoning", "text": ""}
        elif isinstance(event, ReasoningMessageContent) and event.message_id in self._reasoning:
            self._reasoning[event.message_id]["text"] += event.delta
        elif isinstance(event, ReasoningEncryptedValue):
            self._opaque(event)
        elif isinstance(event, TextMessageEnd) and event.metadata and WORKER_OUTPUT_KEY in event.metadata:
            worker = validated(event.metadata[WORKER_OUTPUT_KEY], WorkerAgentOutput)
            reasoning = [{**part, "provider": worker.provider} for part in self._reasoning.values()]
            self._reasoning = {}
            calls = [
                {"type": "tool_call", "id": call_id, "name": call.name, "arguments": "".join(call.arguments)}
                for call_id, call in self._calls.items()
                if call.parent == event.message_id
            ]
            self._rows.append(
                AnswerMessage(
                    role="assistant",
                    external_id=event.message_id,
                    content=worker.answer,
                    meta={"worker_agent_output": msgspec.to_builtins(worker)},
                    parts=[*reasoning, *calls] or None,
                )
            )
        elif isinstance(event, ToolCallResult) and event.metadata and TOOL_OUTPUT_KEY in event.metadata:
            tool = validated(event.metadata[TOOL_OUTPUT_KEY], ToolAgentOutput)
            if tool.content:  # the event's signed URLs are never stored: history signs afresh
                tool = msgspec.structs.replace(tool, content=without_urls(tool.content))
            self._rows.append(
                AnswerMessage(
                    role="tool",
                    external_id=event.message_id,
                    content=tool.result_summary,
                    meta={"tool_agent_output": msgspec.to_builtins(tool)},
                )
            )

    def _opaque(self, event: ReasoningEncryptedValue) -> None:
        """An opaque block for replay: a signature of a reasoning message, a Gemini thought signature on
        a tool call, or a redacted block (whose reasoning message then has no text to show)."""
        kind = (event.metadata or {}).get(REASONING_KIND_KEY, "signature")
        part = self._reasoning.setdefault(event.entity_id, {"type": "reasoning", "text": ""})
        if event.subtype == "tool-call":
            part["toolCallId"] = event.entity_id
        part["redacted" if kind == "redacted" else "signature"] = event.encrypted_value

    async def _finish(self, event: RunFinished | RunError) -> None:
        await self._settled()  # the log's last batch lands before its terminal event
        await self._intake_stored()
        await self._record(event, list(self._buffer))

    async def _record(self, event: RunFinished | RunError, events: list[tuple[int, msgspec.Raw]]) -> None:
        interrupts = None
        if isinstance(event, RunError):
            status, error_code, usage = "failed", event.code, None
        else:
            status, error_code, usage = _status(event), None, _usage(event)
            if isinstance(event.outcome, InterruptOutcome):
                interrupts = msgspec.to_builtins(event.outcome.interrupts)
        failed = isinstance(event, RunError)  # its partial answer is not history, its thread not touched
        rows = ClosingRows(
            run_id=self._run_pk,
            session_id=self._session_pk,
            status=status,
            error_code=error_code,
            usage=usage,
            pending_interrupts=interrupts,
            events=events,
            messages=[] if failed else self._rows,
            parent_id=self._parent_pk,
            touch_session=not failed,
            audit=self._audit,
        )
        async with session_scope(self._alchemy) as db:
            if not await RunRepository(session=db).close(rows):
                raise RunLost("the run was declared lost while it was still going")


def _retrieved(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


def _usage(event: RunFinished) -> dict[str, Any] | None:
    """What the run row keeps: AG-UI's entries and, when counted, the billable usage (summed per session)."""
    if not event.usage:
        return None
    out: dict[str, Any] = {"entries": msgspec.to_builtins(event.usage)}
    billable = (event.metadata or {}).get(USAGE_KEY)
    if billable is not None:
        out["billable"] = billable
    return out


def _status(event: RunFinished) -> str:
    if isinstance(event.outcome, InterruptOutcome):
        return "interrupted"
    if isinstance(event.outcome, CancelledOutcome):
        return "cancelled"
    return "succeeded"


def validated(value: Any, kind: type[T]) -> T:
    """``value`` as a ``kind`` (a structured output in an event's metadata), else :class:`InvalidOutput`."""
    try:
        return msgspec.convert(value, type=kind)
    except msgspec.ValidationError as exc:
        raise InvalidOutput(f"{kind.__name__} failed validation: {exc}") from exc
