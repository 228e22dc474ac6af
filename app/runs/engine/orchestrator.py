"""The orchestrator: one run from ``RUN_STARTED`` to its single terminal event.

The plan comes checked from :mod:`iris.app.runs.intake.prepare`. Its model turns stream through
:mod:`iris.app.runs.engine.model_turn` (provider events become AG-UI events) and
:mod:`iris.app.runs.engine.tool_loop` runs the tools they call and feeds their results back (a bounded number
of model turns); every event goes to the run's sink (the
:class:`~iris.app.runs.store.event_store.EventStore`). Here the run starts, can be cancelled, and ends: with
``RUN_FINISHED`` and its outcome, or — any failure once the stream has started — exactly one
``RUN_ERROR`` with a stable code and a message safe to show; the database then holds no assistant or
tool rows for the run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import msgspec

from iris.app.agui.events import (
    PROTOCOL_VERSION,
    CancelledOutcome,
    Outcome,
    RunError,
    RunFinished,
    RunStarted,
    TokenUsage,
    now_ms,
)
from iris.app.catalogue.views import key_hint
from iris.app.errors import IrisError
from iris.app.persistence.availability import cause, database_unavailable, one_line
from iris.app.runs.content.attachments import NOTICES_KEY
from iris.app.runs.content.outputs import (
    AGENT_KEY,
    IGNORED_RESUME_KEY,
    TRACE_ID_KEY,
    TRACEPARENT_KEY,
    USER_MESSAGE_KEY,
)
from iris.app.runs.content.reasoning import REASONING_NOTE_KEY
from iris.app.runs.content.usage import USAGE_KEY, BillableUsage, Counts, billable, token_usage
from iris.app.runs.engine.model_turn import Builder, ModelTurns, Turn
from iris.app.runs.engine.services import RunServices
from iris.app.runs.engine.tool_loop import CallCancelled, ToolLoop
from iris.app.runs.intake.deadlines import MESSAGES as DEADLINE_MESSAGES
from iris.app.runs.intake.deadlines import RUN_CODE, DeadlineExceeded
from iris.app.runs.intake.fallbacks import AttemptLog, ModelChoice, attempts_metadata, retryable_code
from iris.app.runs.intake.plan import RunPlan
from iris.app.runs.store.event_store import EventSink, IntakeNotStored, InvalidOutput, RunLost
from iris.app.storage.base import StorageError
from iris.app.telemetry import RunTelemetry
from iris.providers import ProviderError, RequestOptions, UnsupportedPartError
from iris.providers.vendor_facts import telemetry_name

log = logging.getLogger("iris.runs")

_PROVIDER_MESSAGES = {
    "auth": "The model provider rejected the server's credentials.",
    "rate_limit": "The model provider is rate-limiting requests; try again shortly.",
    "bad_request": "The model provider refused the request.",
    "unavailable": "The model provider is unavailable; try again shortly.",
    "could_not_fetch_image": "The model provider could not download an image.",
    "other": "The model provider failed.",
}


BUG_CODES = frozenset({"internal_error", "invalid_output"})
"""Run failures that mean a bug in Iris (logged with their traceback); every other code is documented."""


class _Cancelled(Exception):
    """The user asked the run to stop (``POST /agent/runs/{runId}/cancel``)."""


class Orchestrator:
    """Runs one :class:`RunPlan`; see the module docstring."""

    def __init__(self, plan: RunPlan, services: RunServices, store: EventSink) -> None:
        self.plan = plan
        self.services = services
        self.store = store
        self._usage = Counts()
        self._cancel_requested = False
        self._turn_task: asyncio.Task[Turn] | None = None
        self._deadlines = services.deadlines.for_model(plan.model.options)
        self.telemetry: RunTelemetry = services.telemetry.run(
            run_id=plan.run_id,
            thread_id=plan.thread_id,
            agent=None if plan.agent is None else plan.agent.slug,
            provider_name=telemetry_name(plan.provider),
            model_id=plan.model.model_id,
            model_ref=plan.model_ref,
        )
        # Failures count towards cool-downs in runs that can move on (only those ever skip a model).
        self._attempts = AttemptLog(services.cooldowns if plan.fallbacks else None)
        self._fallbacks = list(plan.fallbacks)
        self._cooled: set[str] = set()
        self._model_turns = ModelTurns(plan, store, self._deadlines, self.telemetry, self._attempts)
        self._tool_loop = ToolLoop(plan, services, store, self.telemetry)

    def request_cancel(self) -> None:
        """Stop at once: the model's stream is dropped, open items are closed, the outcome is cancelled."""
        self._cancel_requested = True
        if self._turn_task is not None and not self._turn_task.done():
            self._turn_task.cancel()
        self._tool_loop.cancel_call()

    async def run(self) -> None:
        """The whole run, inside its telemetry (the ``invoke_agent`` span and the run's log ids). Whatever
        happens (the database failing while the run ends, a bug), it ends with one terminal event on its
        live streams: a run that would leave without one gets ``RUN_ERROR`` here, sent at once."""
        with self.telemetry:
            try:
                await self._run()
            except asyncio.CancelledError:
                self._ensure_ended("run_aborted", "The run was stopped by the server.")
                raise
            except Exception:
                log.exception("run %s: ending it failed", self.plan.run_id, extra={"code": "internal_error"})
            self._ensure_ended("internal_error", "The run failed unexpectedly.")

    def _ensure_ended(self, code: str, message: str) -> None:
        """Send the terminal event the run has not sent (live at once; the run keeper records it)."""
        if not self.store.finished:
            self.telemetry.failed(code)
            self.store.abandon(RunError(message=message, code=code, timestamp=now_ms()))

    async def _run(self) -> None:
        try:
            if self._fallbacks:
                await self._skip_cooled()
            plan = self.plan
            started = attempts_metadata(plan.model_ref, self._attempts.attempts)  # cooled-down ones skipped
            if plan.ignored_resume_ids:
                started[IGNORED_RESUME_KEY] = list(plan.ignored_resume_ids)
            if plan.user_message_id is not None:
                started[USER_MESSAGE_KEY] = plan.user_message_id
            if plan.reasoning.ignored is not None:
                started[REASONING_NOTE_KEY] = plan.reasoning.ignored
            if plan.attachment_notices:
                started[NOTICES_KEY] = list(plan.attachment_notices)
            if trace_ids := self.telemetry.trace_ids:
                started[TRACE_ID_KEY], started[TRACEPARENT_KEY] = (
                    trace_ids["traceId"],
                    trace_ids["traceparent"],
                )
            if plan.agent is not None:
                started[AGENT_KEY] = msgspec.to_builtins(plan.agent)
            await self.store.emit(
                RunStarted(
                    thread_id=plan.thread_id,
                    run_id=plan.run_id,
                    protocol_version=PROTOCOL_VERSION,
                    timestamp=now_ms(),
                    metadata=started or None,
                )
            )
            try:
                outcome = await self._bounded_turns()
            except (_Cancelled, CallCancelled):
                # Its ending's failures (the database, say) are handled below, like any other's.
                await self._model_turns.close_dropped()
                outcome = CancelledOutcome()
            await self._finish(outcome)
        except asyncio.CancelledError:
            await asyncio.shield(self._fail("run_aborted", "The run was stopped by the server."))
            raise
        except Exception as exc:
            code, message = _describe(exc, self.plan)
            run_id = self.plan.run_id
            if code in BUG_CODES:
                log.exception("run %s failed: %s", run_id, code, extra={"code": code})
            else:  # documented: a vendor's error, a deadline, an outage — one line, no traceback
                log.warning("run %s failed: %s: %s", run_id, code, _cause(exc), extra={"code": code})
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
        self.telemetry.finished(str(outcome.__struct_config__.tag))

    async def _fail(self, code: str, message: str) -> None:
        """End with one ``RUN_ERROR``, recorded before it is sent. When the database is what failed, or
        recording the failure fails, it is sent at once instead: the client never waits on a database
        that just gave up, and the run manager's heartbeat records the ending once it can."""
        if self.store.finished:
            return
        self.telemetry.failed(code)
        event = RunError(
            message=message,
            code=code,
            usage=self._token_usage(),
            timestamp=now_ms(),
            metadata=attempts_metadata(self.plan.model_ref, self._attempts.attempts),
        )
        if code == "database_unavailable":
            self.store.abandon(event)
            return
        try:
            await self.store.emit(event)
        except IntakeNotStored as exc:
            # Nothing of the run was stored, whatever failed first (a file its failed intake took away,
            # say): that is what the client must hear, to send it again with a new runId.
            log.warning("run %s: %s, then its intake did not commit", self.plan.run_id, code)
            self.store.abandon(msgspec.structs.replace(event, code=exc.code, message=exc.message))
        except Exception as exc:
            if database_unavailable(exc):
                run_id = self.plan.run_id
                log.warning("run %s: %s not recorded yet: database_unavailable: %s", run_id, code, cause(exc))
            else:
                log.exception("run %s: could not record its failure", self.plan.run_id)
            self.store.abandon(event)

    async def _bounded_turns(self) -> Outcome:
        """The run's turns within its overall deadline, on the next fallback while its model fails
        before anything streamed."""
        seconds = self._deadlines.run
        try:
            async with asyncio.timeout(seconds) as timer:
                while True:
                    try:
                        return await self._tool_loop.run(self._next_turn)
                    except Exception as exc:
                        code = retryable_code(exc)
                        if code is None or self._streamed or not self._move_on(code):
                            raise
        except TimeoutError:
            if timer.expired():
                raise DeadlineExceeded(RUN_CODE, seconds) from None
            raise

    @property
    def _streamed(self) -> bool:
        """Whether anything of the answer reached the client: from then on the run never switches. A
        resumed run has sent its tools' results before its first turn."""
        return self._model_turns.emitted > 0 or bool(self.plan.resume)

    def _move_on(self, code: str) -> bool:
        """Switch to the next fallback not cooled down (the failed model's ``code`` counted as a
        fallback); ``False`` when none is left."""
        while self._fallbacks and self._fallbacks[0].model_ref in self._cooled:
            self._attempts.skipped(self._fallbacks.pop(0).model_ref)
        if not self._fallbacks:
            return False
        choice = self._fallbacks.pop(0)
        log.warning(
            "run %s: %s failed with %s; falling back to %s",
            self.plan.run_id, self.plan.model_ref, code, choice.model_ref,
        )  # fmt: skip
        self.services.telemetry.record_fallback(self.plan.model_ref, choice.model_ref, code)
        self._switch(choice)
        return True

    async def _skip_cooled(self) -> None:
        """Start on the first model not cooled down (each skipped one is an attempt); when every
        model is, on the first: better to try than to refuse."""
        refs = [self.plan.model_ref, *(choice.model_ref for choice in self._fallbacks)]
        cooled = await self.services.cooldowns.cooled(refs) if self.services.cooldowns else set()
        if cooled >= set(refs):
            return
        self._cooled = cooled  # fallbacks cooled down now are skipped later too
        if self.plan.model_ref not in cooled:
            return
        self._attempts.skipped(self.plan.model_ref)
        while self._fallbacks[0].model_ref in cooled:
            self._attempts.skipped(self._fallbacks.pop(0).model_ref)
        self._switch(self._fallbacks.pop(0))

    def _switch(self, choice: ModelChoice) -> None:
        """Run on ``choice`` from now on: its deadlines (the run's overall one keeps counting), and
        turns and tools that build each request for its capabilities and options."""
        self.plan = dataclasses.replace(
            self.plan,
            provider=choice.provider,
            model=choice.model,
            model_ref=choice.model_ref,
            capabilities=choice.capabilities,
            reasoning=choice.reasoning,
            retry=choice.retry,
            fallbacks=(),
        )
        own = self.services.deadlines.for_model(choice.model.options)
        self._deadlines = dataclasses.replace(own, run=self._deadlines.run)
        self._model_turns = ModelTurns(self.plan, self.store, self._deadlines, self.telemetry, self._attempts)
        self._tool_loop = ToolLoop(self.plan, self.services, self.store, self.telemetry)

    async def _next_turn(self, build: Builder, options: RequestOptions, by_url: bool) -> Turn:
        """The tool loop's next model turn, unless the run was asked to stop; its counts join the run's."""
        if self._cancel_requested:
            raise _Cancelled
        turn = await self._guarded_turn(build, options, by_url)
        self._usage.add(turn.counts)
        return turn

    async def _guarded_turn(self, build: Builder, options: RequestOptions, by_url: bool) -> Turn:
        """One model turn in its own task, so a cancel request can drop the model's stream at once."""
        self._turn_task = asyncio.create_task(self._model_turns.stream(build, options, by_url))
        try:
            return await self._turn_task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._cancel_requested and (current is None or not current.cancelling()):
                raise _Cancelled from None
            raise
        finally:
            self._turn_task = None

    def _token_usage(self) -> list[TokenUsage] | None:
        usage = token_usage(self._usage, provider=self.plan.provider.id, model=self.plan.model.model_id)
        return [usage] if usage is not None else None

    def billed(self) -> BillableUsage | None:
        """The usage billed so far, to the model answering now (its cost included)."""
        return billable(self._usage, provider=self.plan.provider.id, model=self.plan.model)

    def _usage_metadata(self) -> dict[str, object]:
        """The usage billed to the model that answered, that model and the attempts before it."""
        out = attempts_metadata(self.plan.model_ref, self._attempts.attempts)
        usage = self.billed()
        if usage is not None:
            out[USAGE_KEY] = msgspec.to_builtins(usage)
        return out


def _cause(exc: Exception) -> str:
    """A documented failure's cause in one log line."""
    if isinstance(exc, ProviderError):
        status = f" (HTTP {exc.status})" if exc.status is not None else ""
        return one_line(f"{exc.provider} {exc.kind}{status}: {exc.message}")
    return cause(exc)


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
