"""The tool loop: a run's model turns and the tool calls they make, within its budget of turns.

A turn that calls server tools has them run here, and their results go back to the model in the next
turn. A call to a tool that needs approval ends the run with an interrupt (a later run's ``resume``
answers it, and is acted on here first); a frontend tool's call ends it with the call pending (the
client runs it and sends its answer with the next run). The turns themselves are
:mod:`iris.app.runs.engine.model_turn`'s.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgspec
import uuid_utils

from iris.app.agui.events import Interrupt, InterruptOutcome, Outcome, SuccessOutcome, ToolCallResult
from iris.app.errors import IrisError
from iris.app.mcp import elicitation
from iris.app.mcp.elicitation import InputRequired
from iris.app.media.pipeline import image_budget
from iris.app.media.tool_media import ResultTooLarge, canonical_parts, check_limits
from iris.app.persistence.db import session_scope
from iris.app.persistence.repositories import UploadRepository, parse_uuid
from iris.app.runs.content.context import image_ref, model_messages, reserved_bytes, thread_images
from iris.app.runs.content.outputs import TOOL_OUTPUT_KEY, ToolAgentOutput
from iris.app.runs.content.tool_results import (
    declined_summary,
    image_parts_of,
    model_text,
    place_images,
    result_part,
)
from iris.app.runs.engine.model_turn import Builder, Turn, assistant_message
from iris.app.runs.engine.services import RunServices
from iris.app.runs.engine.tool_activity import ToolActivity, await_reporting
from iris.app.runs.engine.tool_arguments import call_tool, runnable
from iris.app.runs.engine.tool_audit import approval_row, tool_call_row
from iris.app.runs.intake.interrupts import ResumeDecision, approval_interrupt, question_interrupt
from iris.app.runs.intake.plan import RunPlan
from iris.app.runs.intake.toolbox import RunTool
from iris.app.runs.store.event_store import EventSink
from iris.app.storage.signing import sign_image_parts, with_urls
from iris.app.telemetry import RunTelemetry
from iris.providers import ImagePart, Message, RequestOptions
from iris.providers.http import b64
from iris.tools import TextContent, ToolContext, ToolFailed, ToolResult

log = logging.getLogger("iris.runs")

NextTurn = Callable[[Builder, RequestOptions, bool], Awaitable[Turn]]
"""Streams the next model turn (messages, options, images by URL): the orchestrator's, which a cancel
request can drop."""


class CallCancelled(Exception):
    """The run was cancelled while a tool ran: the call was cancelled too (an MCP server is told)."""


class ToolLoop:
    """Runs one :class:`RunPlan`'s turns and tools; see the module docstring."""

    def __init__(
        self, plan: RunPlan, services: RunServices, store: EventSink, telemetry: RunTelemetry
    ) -> None:
        self.plan = plan
        self.services = services
        self.store = store
        self.telemetry = telemetry
        self._call: asyncio.Task[ToolResult] | None = None

    def cancel_call(self) -> None:
        """Cancel the tool call in progress, if any (the run is being cancelled)."""
        if self._call is not None and not self._call.done():
            self._call.cancel()

    async def run(self, next_turn: NextTurn) -> Outcome:
        plan = self.plan
        history = plan.history
        tool_context = ToolContext(
            user_id=plan.owner_id,
            thread_id=plan.thread_id,
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

        self._reserved = reserved_bytes(history, plan.system, offered_all, plan.capabilities)

        async def build(url: bool) -> Sequence[Message]:
            if url not in cache:
                cache[url] = await model_messages(
                    history,
                    self.services.delivery,
                    plan.capabilities,
                    by_url=url,
                    deleted=plan.deleted_uploads,
                    with_tools=bool(offered_all),
                    reserved_bytes=self._reserved,
                    rendering=self.services.page_rendering,
                )
            return place_images([*cache[url], *extra], plan.capabilities)

        async def told(output: ToolAgentOutput) -> Message:
            """A result as the next turn tells it, its images within what the request has left."""
            sent = [
                image
                for message in await build(by_url)
                for part in message.parts
                for image in ((part,) if isinstance(part, ImagePart) else getattr(part, "images", ()))
            ]
            images = await self._deliver(msgspec.to_builtins(output), sent)
            return Message(role="tool", parts=(result_part(msgspec.to_builtins(output), images),))

        asked: list[Interrupt] = []
        for decision in plan.resume:
            if decision.answer is None:
                self.store.audit(approval_row(plan, tools.get(decision.tool_name), decision))
            output = await self._resume(tools.get(decision.tool_name), decision, tool_context)
            if isinstance(output, Interrupt):
                asked.append(output)  # the server asked again: the user answers before the model goes on
            else:
                extra.append(await told(output))
        if asked:
            return InterruptOutcome(interrupts=asked)
        # The tools stay offered on every turn (vendors refuse a history of tool calls without them);
        # calls made in the last allowed turn are answered "budget spent" and the run ends.
        options = msgspec.structs.replace(
            plan.request, system=plan.system, tools=offered_all, reasoning=plan.reasoning.request
        )
        turns = max(1, plan.max_tool_iterations)
        calls = _Calls(tools, frontend, tool_context, told, extra)
        for iteration in range(turns):
            turn = await next_turn(build, options, by_url)
            if not turn.calls:
                return SuccessOutcome()
            extra.append(assistant_message(turn))
            ended = await self._answer_calls(turn, calls, turns=turns, spent=iteration == turns - 1)
            if ended is not None:
                return ended
        return SuccessOutcome()

    async def _answer_calls(self, turn: Turn, calls: _Calls, *, turns: int, spent: bool) -> Outcome | None:
        """Answer a turn's tool calls: a frontend tool's is left to the client, one that needs approval
        asks for it, one in the last allowed turn is refused, any other runs and its result is told to
        the next turn. The run's outcome when it ends here (approvals or pending calls), else ``None``."""
        approvals: list[Interrupt] = []
        pending: list[str] = []
        for call_id, (name, _) in turn.calls.items():
            tool = calls.tools.get(name)
            if name in calls.frontend and tool is None:
                pending.append(call_id)  # the client runs it; its answer comes with the next run
                self.telemetry.tool_outcome(None, "pending")
            elif tool is not None and tool.needs_approval and runnable(tool, turn.arguments(call_id)):
                approvals.append(
                    approval_interrupt(call_id, name, turn.arguments(call_id), expires_at=self._expiry())
                )
                self.telemetry.tool_outcome(name, "approval_requested")
            elif spent:
                self.telemetry.tool_outcome(name, "refused", known=tool is not None)
                await self._refuse(call_id, name, f"this run has used all {turns} of its model turns")
            else:
                output = await self._execute(tool, call_id, name, turn.arguments(call_id), calls.context)
                if isinstance(output, Interrupt):
                    approvals.append(output)  # an MCP server asked the user a question mid-call
                else:
                    calls.extra.append(await calls.told(output))
        if approvals:
            return InterruptOutcome(interrupts=approvals)
        if pending:
            return SuccessOutcome(pending_tool_call_ids=pending)
        return None

    async def _resume(
        self, tool: RunTool | None, decision: ResumeDecision, context: ToolContext
    ) -> ToolAgentOutput | Interrupt:
        """Act on one answered interrupt: give a server's question its answer and wait for the call, run
        the approved call, or tell the model it was declined."""
        if decision.answer is not None:
            given, wait = decision.answer, tool.timeout_seconds if tool is not None else 60.0
            return await self._execute(
                tool,
                decision.tool_call_id,
                decision.tool_name,
                decision.arguments,
                context,
                lambda: elicitation.answer(decision.interrupt_id, given, wait),
            )
        if decision.status == "resolved":
            return await self._execute(
                tool, decision.tool_call_id, decision.tool_name, decision.arguments, context
            )
        self.telemetry.tool_outcome(decision.tool_name, "declined", known=tool is not None)
        output = ToolAgentOutput(
            tool_call_id=decision.tool_call_id,
            tool_name=decision.tool_name,
            status="cancelled",
            result_summary=declined_summary(decision.tool_name, decision.reason),
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
        self,
        tool: RunTool | None,
        call_id: str,
        name: str,
        arguments: str,
        context: ToolContext,
        answered: Callable[[], Awaitable[ToolResult]] | None = None,
    ) -> ToolAgentOutput | Interrupt:
        """Run one call inside its ``execute_tool {tool}`` span; a failure is the model's to read. The
        run's intake is committed first (a resumed run calls its approved tools before any model turn):
        a tool may write through a session of its own (its media, ``delete_attachment``), which must
        come after the run's own rows and must not wait for a transaction of this run. A call that asks
        the user a question is the question's interrupt (the call waits; ``answered`` resumes it)."""
        self.store.commit_intake()
        activity = ToolActivity(call_id, name)
        reporting = replace(context, progress=activity.report, log=activity.log)
        with self.telemetry.tool(name, call_id, known=tool is not None) as span:
            try:
                output = await self._outcome(tool, call_id, name, arguments, reporting, activity, answered)
            except InputRequired as asked:
                span.outcome("input_required", arguments=arguments, result="")
                return question_interrupt(call_id, name, arguments, asked.question)
            content = _event_text(output)
            span.outcome(output.status, arguments=arguments, result=content, error=output.error)
        self.store.audit(
            tool_call_row(self.plan, tool, arguments, output, self.services.audit_tool_arguments)
        )
        if (last := activity.finish(output.status)) is not None:
            await self.store.emit(last)
        await self._emit_result(output, content)
        return output

    async def _outcome(
        self,
        tool: RunTool | None,
        call_id: str,
        name: str,
        arguments: str,
        context: ToolContext,
        activity: ToolActivity,
        answered: Callable[[], Awaitable[ToolResult]] | None = None,
    ) -> ToolAgentOutput:
        """Run one call, bounded by the tool's timeout; any failure (bad arguments, a tool that raises
        or times out, a server that is down, a result over the limits) is a failed output the model
        reads, never the run's failure."""
        started = time.perf_counter()
        content: list[dict[str, Any]] | None = None
        try:
            if answered is not None:
                answer = await self._cancellable(answered(), call_id, name, started, activity)
            elif tool is None:
                raise ToolFailed(f"no tool called {name!r} is available")
            else:
                answer = await self._cancellable(
                    call_tool(tool, arguments, context), call_id, name, started, activity
                )
            check_limits(answer.content, self.services.media.limits)
            content = await canonical_parts(
                answer.content,
                self.services.media,
                owner_id=self.plan.owner_id,
                thread_id=self.plan.thread_id,
                server=tool.source.removeprefix("mcp:") if tool and tool.source.startswith("mcp:") else None,
            )
            output = ToolAgentOutput(
                tool_call_id=call_id,
                tool_name=name,
                status="failed" if answer.is_error else "succeeded",
                result_summary=answer.summary,
                result=None if answer.is_error else msgspec.to_builtins(answer.structured),
                error=_error_text(answer) if answer.is_error else None,
                content=content or None,
                duration_ms=_elapsed_ms(started),
            )
        except (ToolFailed, ResultTooLarge) as exc:
            output = ToolAgentOutput(
                tool_call_id=call_id,
                tool_name=name,
                status="failed",
                result_summary=f"{name} failed: {exc}",
                result=None,
                error=str(exc),
                duration_ms=_elapsed_ms(started),
            )
        return output

    async def _cancellable(
        self, call: Awaitable[ToolResult], call_id: str, name: str, started: float, activity: ToolActivity
    ) -> ToolResult:
        """The call in a task of its own, which :meth:`cancel_call` cancels: the call then ends as
        ``cancelled`` and the run with it (:class:`CallCancelled`). Its progress streams meanwhile."""
        self._call = asyncio.ensure_future(call)
        try:
            return await await_reporting(self._call, activity, self.store.emit)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the run itself is being stopped, not just this call
            if (last := activity.finish("cancelled")) is not None:
                await self.store.emit(last)
            output = ToolAgentOutput(
                tool_call_id=call_id,
                tool_name=name,
                status="cancelled",
                result_summary=f"{name} was cancelled with the run",
                result=None,
                duration_ms=_elapsed_ms(started),
            )
            await self._emit_result(output, "cancelled with the run")
            raise CallCancelled from None
        finally:
            self._call = None

    async def _deliver(self, output: Mapping[str, Any], sent: Sequence[ImagePart]) -> list[ImagePart | str]:
        """A new result's images for the next turn: inline (the vendor takes them in a tool result or
        the message after it), within the model's images per request and what the request's byte
        budget has left beside the images already in it; a note for each that cannot go."""
        caps = self.plan.capabilities
        stored = image_parts_of(output)
        if not stored or not caps.vision:
            return [f"[image {i} not shown: this model cannot see images]" for i, _ in enumerate(stored, 1)]
        room = max(0, caps.max_images - len(sent))
        budget = image_budget(caps, self._reserved)
        if budget is not None:
            budget -= sum(len(b64(image)) for image in sent if image.data is not None)
        kept, over = stored[:room], stored[room:]
        notes = [f"[an image was left out: the model takes {caps.max_images} per request]" for _ in over]
        if not kept:
            return list(notes)
        try:
            delivered: list[ImagePart | str] = list(
                await self.services.delivery.parts(
                    [image_ref(p) for p in kept],
                    caps,
                    by_url=False,
                    budget=max(budget, 1) if budget is not None else None,
                )
            )
        except IrisError as exc:
            return [f"[image left out: {exc.detail}]" for _ in stored]
        return [*delivered, *notes]

    async def _emit_result(self, output: ToolAgentOutput, content: str | None = None) -> None:
        """``TOOL_CALL_RESULT``: its stored media carry fresh signed URLs (the stored output never does)."""
        shown = msgspec.to_builtins(output)
        if output.content:
            signed = await sign_image_parts(
                self.services.storage, output.content, ttl_seconds=self.services.url_ttl_seconds
            )
            shown["content"] = with_urls(output.content, signed)
        await self.store.emit(
            ToolCallResult(
                message_id=str(uuid_utils.uuid7()),
                tool_call_id=output.tool_call_id,
                content=content if content is not None else _event_text(output),
                role="tool",
                metadata={TOOL_OUTPUT_KEY: shown},
            )
        )

    async def _delete_upload(self, upload_id: str) -> None:
        """``delete_attachment``'s side effect: the record, then the stored original."""
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


def _error_text(answer: ToolResult) -> str:
    """An ``isError`` result's own words (its text parts), else its summary."""
    text = "\n".join(p.text for p in answer.content if isinstance(p, TextContent)).strip()
    return text or answer.summary


def _event_text(output: ToolAgentOutput) -> str:
    """``TOOL_CALL_RESULT.content``: the result as text (AG-UI clients show it)."""
    if output.status != "succeeded":
        return f"error: {output.error or 'the tool failed'}"
    if output.content:
        return model_text(msgspec.to_builtins(output))
    return json.dumps(output.result)


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


@dataclass(frozen=True, slots=True)
class _Calls:
    """What answering a turn's tool calls needs: the run's server tools by name, its frontend tools'
    names, the tools' context, and how a result is told to the next turn (appended to ``extra``)."""

    tools: dict[str, RunTool]
    frontend: set[str]
    context: ToolContext
    told: Callable[[ToolAgentOutput], Awaitable[Message]]
    extra: list[Message]
