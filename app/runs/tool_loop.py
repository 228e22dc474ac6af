"""The tool loop: a run's model turns and the tool calls they make, within its budget of turns.

A turn that calls server tools has them run here, and their results go back to the model in the next
turn. A call to a tool that needs approval ends the run with an interrupt (a later run's ``resume``
answers it, and is acted on here first); a frontend tool's call ends it with the call pending (the
client runs it and sends its answer with the next run). The turns themselves are
:mod:`app.runs.model_turn`'s.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Awaitable, Callable, Sequence

import msgspec
import uuid_utils

from app.agui.events import Interrupt, InterruptOutcome, Outcome, SuccessOutcome, ToolCallResult
from app.persistence.db import session_scope
from app.persistence.repositories import UploadRepository, parse_uuid
from app.runs.context import model_messages, reserved_bytes, thread_images, tool_result
from app.runs.event_store import EventSink
from app.runs.intake import RunPlan
from app.runs.interrupts import ResumeDecision, approval_interrupt
from app.runs.model_turn import Builder, Turn
from app.runs.outputs import TOOL_OUTPUT_KEY, ToolAgentOutput
from app.runs.services import RunServices
from app.runs.tools import ServerTool, ToolContext, ToolFailed
from app.telemetry import RunTelemetry
from providers import Message, RequestOptions, TextPart, ToolCallPart

NextTurn = Callable[[Builder, RequestOptions, bool], Awaitable[Turn]]
"""Streams the next model turn (messages, options, images by URL): the orchestrator's, which a cancel
request can drop."""


class ToolLoop:
    """Runs one :class:`RunPlan`'s turns and tools; see the module docstring."""

    def __init__(
        self, plan: RunPlan, services: RunServices, store: EventSink, telemetry: RunTelemetry
    ) -> None:
        self.plan = plan
        self.services = services
        self.store = store
        self.telemetry = telemetry

    async def run(self, next_turn: NextTurn) -> Outcome:
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
        options = msgspec.structs.replace(
            plan.request, system=plan.system, tools=offered_all, reasoning=plan.reasoning.request
        )
        turns = max(1, plan.max_tool_iterations)
        for iteration in range(turns):
            spent = iteration == turns - 1
            turn = await next_turn(build, options, by_url)
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
                    self.telemetry.tool_outcome(None, "pending")
                elif tool is not None and tool.needs_approval:
                    approvals.append(
                        approval_interrupt(call_id, name, turn.arguments(call_id), expires_at=self._expiry())
                    )
                    self.telemetry.tool_outcome(name, "approval_requested")
                elif spent:
                    self.telemetry.tool_outcome(name, "refused", known=tool is not None)
                    await self._refuse(call_id, name, f"this run has used all {turns} of its model turns")
                else:
                    output = await self._execute(tool, call_id, name, turn.arguments(call_id), tool_context)
                    extra.append(Message(role="tool", parts=(tool_result(msgspec.to_builtins(output)),)))
            if approvals:
                return InterruptOutcome(interrupts=approvals)
            if pending:
                return SuccessOutcome(pending_tool_call_ids=pending)
        return SuccessOutcome()

    async def _resume(
        self, tool: ServerTool | None, decision: ResumeDecision, context: ToolContext
    ) -> ToolAgentOutput:
        """Act on one answered interrupt: run the approved call, or tell the model it was declined."""
        if decision.status == "resolved":
            return await self._execute(
                tool, decision.tool_call_id, decision.tool_name, decision.arguments, context
            )
        self.telemetry.tool_outcome(decision.tool_name, "declined", known=tool is not None)
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
        """Run one call inside its ``execute_tool {tool}`` span; a failure is the model's to read."""
        with self.telemetry.tool(name, call_id, known=tool is not None) as span:
            output, content = await self._call(tool, call_id, name, arguments, context)
            span.outcome(output.status, arguments=arguments, result=content, error=output.error)
        await self._emit_result(output, content)
        return output

    async def _call(
        self, tool: ServerTool | None, call_id: str, name: str, arguments: str, context: ToolContext
    ) -> tuple[ToolAgentOutput, str]:
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
        return output, content

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


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
