"""Tools that run only as MCP tasks (SEP-1686, the 2025-11-25 revision's experimental tasks): the call
is task-augmented (``tools/call`` with ``task``), the task is polled (``tasks/get``, at the server's
``pollInterval``, bounded here) until it ends, and its result fetched (``tasks/result``); a call that is
cancelled (the run, or its timeout) cancels the task (``tasks/cancel``). A task that needs the user's
input (``input_required``) is answered through ``tasks/result`` too, which carries the server's
``elicitation/create`` (:mod:`iris.app.mcp.elicitation`).

The SDK 2.3 validates every ``tools/call`` answer as a ``CallToolResult``, so the task is created
through its dispatcher's raw request; the rest uses its typed requests. On 2026-07-28 tasks are an
extension the SDK does not carry: there a task-only tool stays unavailable.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

import mcp_types as mt
from mcp import Client

from iris.tools import ToolFailed

TASK_TTL_MS = 300_000
"""How long the server should keep a task's result after it ends (it may keep it less)."""
POLL_SECONDS = (0.2, 5.0)
"""The poll interval, whatever the server asks: at least and at most."""


async def run_task(
    client: Client, tool: str, arguments: Mapping[str, Any], *, request_seconds: float
) -> mt.CallToolResult:
    """Create the task, poll it to its end, and return its result; ``request_seconds`` bounds each
    request (the whole call is bounded by the caller, whose cancel cancels the task)."""
    params = {"name": tool, "arguments": dict(arguments), "task": {"ttl": TASK_TTL_MS}}
    raw = await client.session._dispatcher.send_raw_request(  # raw: see the module docstring
        "tools/call", params, {"timeout": request_seconds}
    )
    task = mt.CreateTaskResult.model_validate(raw).task
    try:
        while task.status == "working":
            interval = (task.poll_interval or 1000) / 1000
            await asyncio.sleep(min(max(interval, POLL_SECONDS[0]), POLL_SECONDS[1]))
            task = await client.session.send_request(
                mt.GetTaskRequest(params=mt.GetTaskRequestParams(task_id=task.task_id)),
                mt.GetTaskResult,
                request_read_timeout_seconds=request_seconds,
            )
        if task.status in ("failed", "cancelled"):
            raise ToolFailed(f"its task {task.status}: {task.status_message or 'no reason given'}")
        return await client.session.send_request(
            mt.GetTaskPayloadRequest(params=mt.GetTaskPayloadRequestParams(task_id=task.task_id)),
            mt.CallToolResult,
        )
    except asyncio.CancelledError:
        await asyncio.shield(_cancel(client, task.task_id, request_seconds))
        raise


async def _cancel(client: Client, task_id: str, request_seconds: float) -> None:
    """Ask the server to stop the task (bounded; a server that cannot is left to its TTL)."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(min(request_seconds, 5.0)):
            await client.session.send_request(
                mt.CancelTaskRequest(params=mt.CancelTaskRequestParams(task_id=task_id)), mt.CancelTaskResult
            )
