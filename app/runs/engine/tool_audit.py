"""A run's audit log rows: each approval answered and each tool call made.

The rows are kept by the run's event sink and written with its closing transaction
(:class:`~iris.app.persistence.repositories.closing_rows.ClosingRows`), so auditing adds no
transaction and never holds one across a tool call. A call's arguments are redacted (their names kept,
each value ``"[redacted]"``) unless ``IRIS_AUDIT_TOOL_ARGUMENTS`` keeps them: they may carry what a
user typed, a path or a secret.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from opentelemetry import trace

from iris.app.persistence.repositories import AuditRow
from iris.app.runs.content.outputs import ToolAgentOutput
from iris.app.runs.intake.interrupts import ResumeDecision
from iris.app.runs.intake.plan import RunPlan
from iris.app.runs.intake.toolbox import RunTool

REDACTED = "[redacted]"
_CALL_STATUS = {"succeeded": 200, "cancelled": 499, "failed": 500}
"""A call's outcome as the row's status (HTTP-like, as the request rows have)."""


def tool_call_row(
    plan: RunPlan, tool: RunTool | None, arguments: str, output: ToolAgentOutput, keep_arguments: bool
) -> AuditRow:
    """The row for one tool call that ran (or failed to): its outcome and duration from ``output``."""
    name, outcome = output.tool_name, output.status
    detail = _tool_detail(tool, name, outcome)
    detail["durationMs"] = output.duration_ms
    detail["arguments"] = _arguments(arguments, keep=keep_arguments)
    return _row(plan, "tool call", tool, name, _CALL_STATUS.get(outcome, 500), detail)


def approval_row(plan: RunPlan, tool: RunTool | None, decision: ResumeDecision) -> AuditRow:
    """The row for one approval answered: granted (the call then runs and has its own row) or declined."""
    granted = decision.status == "resolved"
    detail = _tool_detail(tool, decision.tool_name, "approved" if granted else "declined")
    detail["interruptId"] = decision.interrupt_id
    action = "approval granted" if granted else "approval declined"
    return _row(plan, action, tool, decision.tool_name, 200 if granted else 403, detail)


def _row(
    plan: RunPlan, action: str, tool: RunTool | None, name: str, status: int, detail: dict[str, Any]
) -> AuditRow:
    """A row of the run's: its owner, the key and request that started it, the current trace."""
    context = trace.get_current_span().get_span_context()
    return AuditRow(
        at=dt.datetime.now(dt.UTC),
        actor=plan.owner_id,
        action=action,
        target=f"{tool.source}/{name}" if tool is not None else name,
        status=status,
        detail=detail,
        trace_id=format(context.trace_id, "032x") if context.is_valid else None,
        key_id=plan.key_id,
        request_id=plan.request_id,
    )


def _tool_detail(tool: RunTool | None, name: str, outcome: str) -> dict[str, Any]:
    source = tool.source if tool is not None else None
    server = source.removeprefix("mcp:") if source is not None and source.startswith("mcp:") else None
    return {"tool": name, "source": source, "server": server, "outcome": outcome}


def _arguments(arguments: str, *, keep: bool) -> Any:
    """The call's arguments as kept: parsed JSON (or the text) when kept, else their names only."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        parsed = arguments
    if keep:
        return parsed
    if isinstance(parsed, dict):
        return dict.fromkeys(parsed, REDACTED)
    return REDACTED
