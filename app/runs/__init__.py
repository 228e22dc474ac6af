"""Agent runs, in rooms: ``intake/`` before the stream, ``engine/`` one run from ``RUN_STARTED`` to its
end, ``stateless/`` the path that stores nothing, ``store/`` the event log and its followers,
``conversations/`` keeping sessions, ``content/`` what messages are made of. A room imports only the rooms
below it (import-linter's contract in pyproject.toml).

This module is the façade: the packages outside ``iris.app.runs`` (``iris.app.api``, ``iris.app.asgi``) import
what they
use from here, never from a room. It imports every layer below ``api`` (``catalogue``, ``media``,
``security``, ``schemas``, ``agui``, …).
"""

from iris.app.runs.content.attachments import PageRendering
from iris.app.runs.content.outputs import (
    AGENT_KEY,
    IGNORED_RESUME_KEY,
    TOOL_OUTPUT_KEY,
    TRACE_ID_KEY,
    TRACEPARENT_KEY,
    USER_MESSAGE_KEY,
    WORKER_OUTPUT_KEY,
    ToolAgentOutput,
    WorkerAgentOutput,
)
from iris.app.runs.content.parts import PartLimits, canonical_user_parts, deleted_uploads
from iris.app.runs.content.reasoning import REASONING_KIND_KEY
from iris.app.runs.content.usage import USAGE_KEY, BillableUsage, SessionUsage, session_usage
from iris.app.runs.conversations.branches import Tree
from iris.app.runs.conversations.history import HistoryFormat, chat_message, history_messages, stored_parts
from iris.app.runs.conversations.session_export import filename as export_filename
from iris.app.runs.conversations.session_export import markdown as export_markdown
from iris.app.runs.conversations.session_export import session_export
from iris.app.runs.conversations.session_import import import_session
from iris.app.runs.conversations.sessions import offered_model, session_out, switch_line
from iris.app.runs.engine.manager import FOLLOW_POLL_SECONDS, RunManager
from iris.app.runs.engine.services import RunServices
from iris.app.runs.engine.streaming import (
    EventStream,
    Intake,
    follow_stream,
    observed,
    resume_point,
    start_stream,
)
from iris.app.runs.intake.chat_input import chat_field, chat_run_input
from iris.app.runs.intake.deadlines import MESSAGES as DEADLINE_MESSAGES
from iris.app.runs.intake.deadlines import Deadlines
from iris.app.runs.intake.estimate import estimate_input_tokens
from iris.app.runs.intake.fallbacks import ATTEMPTS_KEY, MODEL_KEY, Attempt, Cooldowns
from iris.app.runs.intake.interrupts import TOOL_CALL_KEY
from iris.app.runs.intake.plan import RunPlan
from iris.app.runs.intake.prepare import prepare_run
from iris.app.runs.intake.resource_links import read_link
from iris.app.runs.intake.tool_views import every_tool, server_out
from iris.app.runs.intake.toolbox import Toolbox
from iris.app.runs.intake.ui_chat_input import ui_chat_run_input
from iris.app.runs.stateless.chat import (
    answer_stateless,
    stateless_plan,
    stateless_run,
    stream_stateless,
    thread_of,
)
from iris.app.runs.stateless.gateway import GatewayRun
from iris.app.runs.stateless.settle import call_hold
from iris.app.runs.store.live import FollowerLimits
from iris.app.runs.store.notices import log_wakeups

__all__ = [
    "AGENT_KEY",
    "ATTEMPTS_KEY",
    "DEADLINE_MESSAGES",
    "FOLLOW_POLL_SECONDS",
    "IGNORED_RESUME_KEY",
    "MODEL_KEY",
    "REASONING_KIND_KEY",
    "TOOL_CALL_KEY",
    "TOOL_OUTPUT_KEY",
    "TRACEPARENT_KEY",
    "TRACE_ID_KEY",
    "USAGE_KEY",
    "USER_MESSAGE_KEY",
    "WORKER_OUTPUT_KEY",
    "Attempt",
    "BillableUsage",
    "Cooldowns",
    "Deadlines",
    "EventStream",
    "FollowerLimits",
    "GatewayRun",
    "HistoryFormat",
    "Intake",
    "PageRendering",
    "PartLimits",
    "RunManager",
    "RunPlan",
    "RunServices",
    "SessionUsage",
    "ToolAgentOutput",
    "Toolbox",
    "Tree",
    "WorkerAgentOutput",
    "answer_stateless",
    "call_hold",
    "canonical_user_parts",
    "chat_field",
    "chat_message",
    "chat_run_input",
    "deleted_uploads",
    "estimate_input_tokens",
    "every_tool",
    "export_filename",
    "export_markdown",
    "follow_stream",
    "history_messages",
    "import_session",
    "log_wakeups",
    "observed",
    "offered_model",
    "prepare_run",
    "read_link",
    "resume_point",
    "server_out",
    "session_export",
    "session_out",
    "session_usage",
    "start_stream",
    "stateless_plan",
    "stateless_run",
    "stored_parts",
    "stream_stateless",
    "switch_line",
    "thread_of",
    "ui_chat_run_input",
]
