"""The structured results of a run (seed 000 §3, §5), carried in AG-UI event ``metadata``.

AG-UI 1.0 clients strip unknown top-level event fields, so these objects travel under namespaced
metadata keys, and the event store validates them against these schemas before persisting them.
"""

from __future__ import annotations

from typing import Any, Literal

from iris.app.runs.content.usage import BillableUsage
from iris.app.schemas.agents import AgentRef
from iris.providers.wire import WireStruct

WORKER_OUTPUT_KEY = "iris/workerAgentOutput"
TOOL_OUTPUT_KEY = "iris/toolAgentOutput"
IGNORED_RESUME_KEY = "iris/ignoredResumeEntries"
"""On ``RUN_STARTED``: the interrupt ids of resume entries that answered no open interrupt."""
USER_MESSAGE_KEY = "iris/userMessageId"
"""On ``RUN_STARTED``: the id (as history shows it) of the user message the run answers."""
TRACE_ID_KEY = "iris/traceId"
"""On ``RUN_STARTED``, when tracing is on: the trace the run's spans are in (32 hex digits)."""
TRACEPARENT_KEY = "iris/traceparent"
"""On ``RUN_STARTED``, when tracing is on: the run's ``invoke_agent`` span as a W3C ``traceparent``
(a follower in another process joins the run's trace with it)."""
AGENT_KEY = "iris/agent"
"""On ``RUN_STARTED``: the agent and version the run uses (:class:`~iris.app.schemas.agents.AgentRef`)."""


class WorkerAgentOutput(WireStruct, omit_defaults=True, kw_only=True):
    """The worker's answer for one assistant message (``TEXT_MESSAGE_END``): ``reasoningSummary`` is
    the start of what the model thought (redacted blocks never appear), ``reasoningTokens`` what it
    cost, as the vendor reported it; ``stopSequence`` the request's stop sequence that ended the
    answer, when the vendor said which; ``agent`` the agent version that answered (absent for stateless
    chat)."""

    answer: str
    model: str
    provider: str
    finish_reason: str
    stop_sequence: str | None = None
    tool_call_ids: list[str]
    usage: BillableUsage | None = None
    reasoning_summary: str | None = None
    reasoning_tokens: int | None = None
    agent: AgentRef | None = None


class ToolAgentOutput(WireStruct, omit_defaults=True, kw_only=True):
    """One server tool call (``TOOL_CALL_RESULT``). ``result`` is the tool's structured data (``null``
    when it failed, gave none, or the user declined it: ``cancelled``); ``content`` what it returned
    for the model, as canonical parts (text, ``image`` and ``audio`` stored as uploads of the thread,
    ``json``, ``resource_link``, ``resource``). Stored parts hold no URL; events and history add a
    fresh ``url`` and ``expiresAt`` to each stored one."""

    tool_call_id: str
    tool_name: str
    status: Literal["succeeded", "failed", "cancelled"]
    result_summary: str
    result: Any
    duration_ms: int
    error: str | None = None
    content: list[dict[str, Any]] | None = None
