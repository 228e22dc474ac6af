"""The orchestrator: one run from ``RUN_STARTED`` to its single terminal event.

It loads the thread from the database, streams the model through the provider layer, translates
provider events into AG-UI events, executes server tools and feeds their results back (a bounded
number of model turns), and hands every event to its sink (the :class:`~app.runs.event_store.EventStore`).
Any failure once the stream has started becomes exactly one ``RUN_ERROR`` with a stable code and a
message safe to show; the database then holds no assistant or tool rows for the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import msgspec
import uuid_utils
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from app.agui.events import (
    PROTOCOL_VERSION,
    CancelledOutcome,
    Interrupt,
    InterruptOutcome,
    Outcome,
    RunError,
    RunFinished,
    RunStarted,
    SuccessOutcome,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    TokenUsage,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
    now_ms,
)
from app.catalogue.views import key_hint
from app.errors import IrisError
from app.media.pipeline import ImageDelivery, stream_with_inline_fallback
from app.persistence.availability import database_unavailable
from app.persistence.db import session_scope
from app.persistence.repositories import UploadRepository, parse_uuid
from app.runs.context import model_messages, reserved_bytes, thread_images, tool_result
from app.runs.deadlines import MESSAGES as DEADLINE_MESSAGES
from app.runs.deadlines import RUN_CODE, DeadlineExceeded, Deadlines, paced
from app.runs.event_store import EventSink, IntakeNotStored, InvalidOutput, RunLost
from app.runs.intake import RunPlan
from app.runs.interrupts import ResumeDecision, approval_interrupt
from app.runs.outputs import (
    IGNORED_RESUME_KEY,
    TOOL_OUTPUT_KEY,
    USER_MESSAGE_KEY,
    WORKER_OUTPUT_KEY,
    ToolAgentOutput,
    WorkerAgentOutput,
)
from app.runs.reasoning import REASONING_NOTE_KEY, ProviderReasoningEvent, ReasoningStream
from app.runs.tools import ServerTool, ToolContext, ToolFailed
from app.runs.usage import USAGE_KEY, Counts, billable, request_image_tokens, token_usage
from app.storage.base import Storage, StorageError
from providers import (
    Finish,
    Message,
    ProviderError,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningOpaque,
    ReasoningStart,
    RequestOptions,
    TextDelta,
    TextPart,
    ToolCallPart,
    UnsupportedPartError,
    Usage,
)
from providers import ToolCallArgs as ProviderToolCallArgs
from providers import ToolCallEnd as ProviderToolCallEnd
from providers import ToolCallStart as ProviderToolCallStart
from providers import Warning as ProviderWarning

log = logging.getLogger("iris.runs")

_Builder = Callable[[bool], Awaitable[Sequence[Message]]]

_PROVIDER_MESSAGES = {
    "auth": "The model provider rejected the server's credentials.",
    "rate_limit": "The model provider is rate-limiting requests; try again shortly.",
    "bad_request": "The model provider refused the request.",
    "unavailable": "The model provider is unavailable; try again shortly.",
    "could_not_fetch_image": "The model provider could not download an image.",
    "other": "The model provider failed.",
}


@dataclass(frozen=True, slots=True)
class RunServices:
    """What runs share, built once per app."""

    alchemy: SQLAlchemyAsyncConfig
    storage: Storage
    delivery: ImageDelivery
    max_tool_iterations: int
    interrupt_ttl_seconds: int
    deadlines: Deadlines
    """The deadline settings; a model's ``options`` may override them."""


class _Cancelled(Exception):
    """The user asked the run to stop (``POST /agent/runs/{runId}/cancel``)."""


@dataclass(slots=True)
class _Turn:
    """What one model turn produced. Its text message opens lazily, once its reasoning is closed."""

    message_id: str
    reasoning: ReasoningStream
    text: list[str] = field(default_factory=list)
    calls: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    finish_reason: str = "stop"
    counts: Counts = field(default_factory=Counts)
    text_open: bool = False

    @property
    def answer(self) -> str:
        return "".join(self.text)

    def arguments(self, call_id: str) -> str:
        return "".join(self.calls[call_id][1])


class Orchestrator:
    """Runs one :class:`RunPlan`; see the module docstring."""

    def __init__(self, plan: RunPlan, services: RunServices, store: EventSink) -> None:
        self.plan = plan
        self.services = services
        self.store = store
        self._usage = Counts()
        self._cancel_requested = False
        self._turn_task: asyncio.Task[_Turn] | None = None
        self._open_turn: _Turn | None = None
        self._open_calls: set[str] = set()
        self._deadlines = services.deadlines.for_model(plan.model.options)

    def request_cancel(self) -> None:
        """Stop at once: the model's stream is dropped, open items are closed, the outcome is cancelled."""
        self._cancel_requested = True
        if self._turn_task is not None and not self._turn_task.done():
            self._turn_task.cancel()

    async def run(self) -> None:
        plan = self.plan
        try:
            started: dict[str, object] = {}
            if plan.ignored_resume_ids:
                started[IGNORED_RESUME_KEY] = list(plan.ignored_resume_ids)
            if plan.user_message_id is not None:
                started[USER_MESSAGE_KEY] = plan.user_message_id
            if plan.reasoning.ignored is not None:
                started[REASONING_NOTE_KEY] = plan.reasoning.ignored
            await self.store.emit(
                RunStarted(
                    thread_id=plan.thread_id,
                    run_id=plan.run_id,
                    protocol_version=PROTOCOL_VERSION,
                    timestamp=now_ms(),
                    metadata=started or None,
                )
            )
            outcome = await self._bounded_turns()
            await self._finish(outcome)
        except _Cancelled:
            await self._finish_cancelled()
        except asyncio.CancelledError:
            await asyncio.shield(self._fail("run_aborted", "The run was stopped by the server."))
            raise
        except Exception as exc:
            code, message = _describe(exc, plan)
            expected = (
                code.startswith("provider_")
                or code == "database_unavailable"
                or isinstance(exc, DeadlineExceeded)
            )
            log.log(
                logging.WARNING if expected else logging.ERROR,
                "run %s failed: %s",
                plan.run_id,
                code,
                exc_info=not expected,
            )
            await self._fail(code, message)

    async def _finish(self, outcome: Outcome) -> None:
        await self.store.emit(
            RunFinished(
                thread_id=self.plan.thread_id,
                run_id=self.plan.run_id,
                outcome=outcome,
                usage=self._token_usage(),
                timestamp=now_ms(),
                metadata=self._usage_metadata(),
            )
        )

    async def _finish_cancelled(self) -> None:
        """Close what the dropped turn left open — its partial answer is kept — then end as cancelled."""
        for call_id in sorted(self._open_calls):
            await self.store.emit(ToolCallEnd(tool_call_id=call_id))
        self._open_calls.clear()
        if self._open_turn is not None:
            self._open_turn.finish_reason = "cancelled"
            await self._end_message(self._open_turn)
        await self._finish(CancelledOutcome())

    async def _fail(self, code: str, message: str) -> None:
        if self.store.finished:
            return
        event = RunError(message=message, code=code, usage=self._token_usage(), timestamp=now_ms())
        try:
            await self.store.emit(event)
        except Exception:
            log.exception("run %s: could not record its failure", self.plan.run_id)
            self.store.abandon(event)

    async def _bounded_turns(self) -> Outcome:
        """The run's turns within its overall deadline."""
        seconds = self._deadlines.run
        try:
            async with asyncio.timeout(seconds) as timer:
                return await self._turns()
        except TimeoutError:
            if timer.expired():
                raise DeadlineExceeded(RUN_CODE, seconds) from None
            raise

    async def _turns(self) -> Outcome:
        plan = self.plan
        history = plan.history
        tool_context = ToolContext(
            images=thread_images(history, plan.deleted_uploads),
            now=lambda: dt.datetime.now(dt.UTC),
            delete_upload=self._delete_upload,
        )
        by_url = self.services.delivery.by_url(plan.capabilities)
        tools = {tool.name: tool for tool in plan.server_tools}
        frontend = {tool.name for tool in plan.frontend_tools}
        offered_all = (*(tool.spec for tool in tools.values()), *plan.frontend_tools)
        cache: dict[bool, list[Message]] = {}
        extra: list[Message] = []

        async def build(url: bool) -> Sequence[Message]:
            if url not in cache:
                cache[url] = await model_messages(
                    history,
                    self.services.delivery,
                    plan.capabilities,
                    by_url=url,
                    deleted=plan.deleted_uploads,
                    with_tools=bool(offered_all),
                    reserved_bytes=reserved_bytes(history, plan.system, offered_all),
                )
            return [*cache[url], *extra]

        for decision in plan.resume:
            output = await self._resume(tools.get(decision.tool_name), decision, tool_context)
            extra.append(Message(role="tool", parts=(tool_result(msgspec.to_builtins(output)),)))
        # The tools stay offered on every turn (vendors refuse a history of tool calls without them);
        # calls made in the last allowed turn are answered "budget spent" and the run ends.
        options = RequestOptions(system=plan.system, tools=offered_all, reasoning=plan.reasoning.request)
        turns = max(1, self.services.max_tool_iterations)
        for iteration in range(turns):
            if self._cancel_requested:
                raise _Cancelled
            spent = iteration == turns - 1
            turn = await self._guarded_turn(build, options, by_url)
            self._usage.add(turn.counts)
            if not turn.calls:
                return SuccessOutcome()
            extra.append(
                Message(
                    role="assistant",
                    parts=(
                        *turn.reasoning.parts,  # sent back unchanged on the tool-use continuation
                        *((TextPart(text=turn.answer),) if turn.answer else ()),
                        *(
                            ToolCallPart(id=call_id, name=name, arguments=turn.arguments(call_id))
                            for call_id, (name, _) in turn.calls.items()
                        ),
                    ),
                )
            )
            approvals: list[Interrupt] = []
            pending: list[str] = []
            for call_id, (name, _) in turn.calls.items():
                tool = tools.get(name)
                if name in frontend and tool is None:
                    pending.append(call_id)  # the client runs it; its answer comes with the next run
                elif tool is not None and tool.needs_approval:
                    approvals.append(
                        approval_interrupt(call_id, name, turn.arguments(call_id), expires_at=self._expiry())
                    )
                elif spent:
                    await self._refuse(call_id, name, f"this run has used all {turns} of its model turns")
                else:
                    output = await self._execute(tool, call_id, name, turn.arguments(call_id), tool_context)
                    extra.append(Message(role="tool", parts=(tool_result(msgspec.to_builtins(output)),)))
            if approvals:
                return InterruptOutcome(interrupts=approvals)
            if pending:
                return SuccessOutcome(pending_tool_call_ids=pending)
        return SuccessOutcome()

    async def _guarded_turn(self, build: _Builder, options: RequestOptions, by_url: bool) -> _Turn:
        """One model turn in its own task, so a cancel request can drop the model's stream at once."""
        self._turn_task = asyncio.create_task(self._model_turn(build, options, by_url))
        try:
            return await self._turn_task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._cancel_requested and (current is None or not current.cancelling()):
                raise _Cancelled from None
            raise
        finally:
            self._turn_task = None

    async def _model_turn(self, build: _Builder, options: RequestOptions, by_url: bool) -> _Turn:
        plan = self.plan
        turn = _Turn(message_id=str(uuid_utils.uuid7()), reasoning=ReasoningStream(provider=plan.provider.id))
        self._open_turn = turn

        async def measured(url: bool) -> Sequence[Message]:
            messages = await build(url)
            turn.counts.estimated_image_tokens = request_image_tokens(messages, plan.provider.id, plan.model)
            self.store.commit_intake()  # while the vendor thinks
            return messages

        stream = paced(
            stream_with_inline_fallback(plan.provider, plan.model, options, measured, by_url=by_url),
            self._deadlines,
        )
        async with contextlib.aclosing(stream):
            async for event in stream:
                if isinstance(event, ReasoningStart | ReasoningDelta | ReasoningEnd | ReasoningOpaque):
                    await self._reasoning(turn, event)
                    continue
                if isinstance(event, TextDelta | ProviderToolCallStart):
                    await self._open_text(turn)
                if isinstance(event, TextDelta):
                    if event.delta:
                        turn.text.append(event.delta)
                        await self.store.emit(
                            TextMessageContent(message_id=turn.message_id, delta=event.delta)
                        )
                elif isinstance(event, ProviderToolCallStart):
                    turn.calls[event.id] = (event.name, [])
                    self._open_calls.add(event.id)
                    await self.store.emit(
                        ToolCallStart(
                            tool_call_id=event.id,
                            tool_call_name=event.name,
                            parent_message_id=turn.message_id,
                        )
                    )
                elif isinstance(event, ProviderToolCallArgs) and event.id in self._open_calls:
                    turn.calls[event.id][1].append(event.delta)
                    await self.store.emit(ToolCallArgs(tool_call_id=event.id, delta=event.delta))
                elif isinstance(event, ProviderToolCallEnd) and event.id in self._open_calls:
                    self._open_calls.discard(event.id)
                    await self.store.emit(ToolCallEnd(tool_call_id=event.id))
                elif isinstance(event, Usage):
                    turn.counts.report(event)
                elif isinstance(event, Finish):
                    turn.finish_reason = event.reason
                elif isinstance(event, ProviderWarning):
                    log.info("run %s: %s warning: %s", plan.run_id, plan.provider.id, event.message)
        for call_id in sorted(self._open_calls):  # a vendor that never closed a call: close it first
            await self.store.emit(ToolCallEnd(tool_call_id=call_id))
        self._open_calls.clear()
        await self._end_message(turn)
        return turn

    async def _reasoning(self, turn: _Turn, event: ProviderReasoningEvent) -> None:
        for out in turn.reasoning.translate(event):
            await self.store.emit(out)

    async def _open_text(self, turn: _Turn) -> None:
        """The answer's message opens once, after the turn's reasoning so far is closed."""
        if turn.text_open:
            return
        for out in turn.reasoning.close():
            await self.store.emit(out)
        turn.text_open = True
        await self.store.emit(TextMessageStart(message_id=turn.message_id, role="assistant"))

    async def _end_message(self, turn: _Turn) -> None:
        await self._open_text(turn)
        plan = self.plan
        worker = WorkerAgentOutput(
            answer=turn.answer,
            model=plan.model.model_id,
            provider=plan.provider.id,
            finish_reason=turn.finish_reason,
            tool_call_ids=list(turn.calls),
            usage=billable(turn.counts, provider=plan.provider.id, model=plan.model),
            reasoning_summary=turn.reasoning.summary,
            reasoning_tokens=turn.counts.reasoning_tokens,
        )
        self._open_turn = None
        await self.store.emit(
            TextMessageEnd(
                message_id=turn.message_id, metadata={WORKER_OUTPUT_KEY: msgspec.to_builtins(worker)}
            )
        )

    async def _resume(
        self, tool: ServerTool | None, decision: ResumeDecision, context: ToolContext
    ) -> ToolAgentOutput:
        """Act on one answered interrupt: run the approved call, or tell the model it was declined."""
        if decision.status == "resolved":
            return await self._execute(
                tool, decision.tool_call_id, decision.tool_name, decision.arguments, context
            )
        output = ToolAgentOutput(
            tool_call_id=decision.tool_call_id,
            tool_name=decision.tool_name,
            status="cancelled",
            result_summary=f"{decision.tool_name} was not run: the user declined it",
            result=None,
            duration_ms=0,
        )
        await self._emit_result(output, "declined by the user")
        return output

    async def _refuse(self, call_id: str, name: str, reason: str) -> None:
        """Answer a call that will not be run (the run's turns are spent)."""
        output = ToolAgentOutput(
            tool_call_id=call_id,
            tool_name=name,
            status="failed",
            result_summary=f"{name} was not run: {reason}",
            result=None,
            error=reason,
            duration_ms=0,
        )
        await self._emit_result(output, f"error: {reason}")

    async def _execute(
        self, tool: ServerTool | None, call_id: str, name: str, arguments: str, context: ToolContext
    ) -> ToolAgentOutput:
        started = time.perf_counter()
        try:
            if tool is None:
                raise ToolFailed(f"no tool called {name!r} is available")
            answer = await tool.call(arguments, context)
            output = ToolAgentOutput(
                tool_call_id=call_id,
                tool_name=name,
                status="succeeded",
                result_summary=answer.summary,
                result=answer.result,
                duration_ms=_elapsed_ms(started),
            )
            content = json.dumps(answer.result)
        except ToolFailed as exc:
            output = ToolAgentOutput(
                tool_call_id=call_id,
                tool_name=name,
                status="failed",
                result_summary=f"{name} failed: {exc}",
                result=None,
                error=str(exc),
                duration_ms=_elapsed_ms(started),
            )
            content = f"error: {exc}"
        await self._emit_result(output, content)
        return output

    async def _emit_result(self, output: ToolAgentOutput, content: str) -> None:
        await self.store.emit(
            ToolCallResult(
                message_id=str(uuid_utils.uuid7()),
                tool_call_id=output.tool_call_id,
                content=content,
                role="tool",
                metadata={TOOL_OUTPUT_KEY: msgspec.to_builtins(output)},
            )
        )

    async def _delete_upload(self, upload_id: str) -> None:
        """``delete_attachment``'s side effect: the record, then the stored original."""
        # It writes through a session of its own: the intake must not be left holding the write lock.
        self.store.commit_intake()
        upload_pk = parse_uuid(upload_id)
        if upload_pk is None:
            raise ToolFailed(f"{upload_id!r} is not an upload id")
        async with session_scope(self.services.alchemy) as db:
            upload = await UploadRepository(session=db).delete_owned(
                upload_pk, self.plan.owner_id, self.plan.thread_id
            )
        if upload is None:
            raise ToolFailed(f"no upload {upload_id!r} in this conversation")
        await self.services.storage.delete(upload.path)

    def _expiry(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=self.services.interrupt_ttl_seconds)

    def _token_usage(self) -> list[TokenUsage] | None:
        usage = token_usage(self._usage, provider=self.plan.provider.id, model=self.plan.model.model_id)
        return [usage] if usage is not None else None

    def _usage_metadata(self) -> dict[str, object] | None:
        usage = billable(self._usage, provider=self.plan.provider.id, model=self.plan.model)
        return {USAGE_KEY: msgspec.to_builtins(usage)} if usage is not None else None


def _describe(exc: Exception, plan: RunPlan) -> tuple[str, str]:
    """A stable code and a message safe to show for a failure after the stream started."""
    if isinstance(exc, DeadlineExceeded):
        return exc.code, DEADLINE_MESSAGES[exc.code]
    if isinstance(exc, ProviderError):
        message = _PROVIDER_MESSAGES.get(exc.kind, _PROVIDER_MESSAGES["other"])
        if exc.kind == "auth":  # the variable's name tells the operator what to fix; its value never shows
            message = f"{message[:-1]}: {key_hint(plan.provider, plan.model)}."
        return f"provider_{exc.kind}", message
    if isinstance(exc, UnsupportedPartError):
        return "unsupported_part", str(exc)
    if isinstance(exc, StorageError):
        return "storage_unavailable", "Stored images could not be read; try again shortly."
    if isinstance(exc, InvalidOutput):
        return "invalid_output", "The run produced an invalid result."
    if isinstance(exc, IntakeNotStored):
        return exc.code, exc.message
    if isinstance(exc, RunLost):
        return "run_lost", "The run was declared lost while it was still going."
    if database_unavailable(exc):
        return "database_unavailable", "The database is unavailable; try again shortly."
    if isinstance(exc, IrisError):  # a check that could only run once the images were made
        return exc.code, exc.detail
    return "internal_error", "The run failed unexpectedly."


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
