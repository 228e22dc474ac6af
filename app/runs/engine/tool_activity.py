"""A running tool call's progress and log lines as AG-UI activity (``activityType`` ``iris/toolProgress``).

A call reports through :class:`ToolActivity` (the ``progress`` hook of its ``ToolContext``, and the log
lines of an MCP server), from whatever task it runs in: a report only records the latest values and
wakes the run. The run's own task turns what was recorded into events (:func:`await_reporting`), so a
run's events keep one writer: the first becomes ``ACTIVITY_SNAPSHOT`` with the whole content, later ones
``ACTIVITY_DELTA`` with a JSON Patch of what changed, at most one every :data:`MIN_INTERVAL_SECONDS`
(the latest values win), and the call's end one last delta with its ``status``. A call that reports
nothing sends nothing. Reports after the call ended are dropped.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import uuid_utils

from iris.app.agui.events import (
    ActivityDelta,
    ActivitySnapshot,
    AddOperation,
    AgUiEvent,
    PatchOperation,
    RemoveOperation,
    ReplaceOperation,
    now_ms,
)

ACTIVITY_TYPE = "iris/toolProgress"
MIN_INTERVAL_SECONDS = 0.2
"""The least time between two activity events of one call: a tool reporting every millisecond costs a
few events a second, not thousands."""
MAX_LOG_LINES = 20
"""Log lines an activity keeps (the oldest go first)."""
MAX_TEXT = 500
"""Characters kept of a message or a log line."""

T = TypeVar("T")
Emit = Callable[[AgUiEvent], Awaitable[None]]


class ToolActivity:
    """One call's activity: what it reported last, and what the client has been sent of it."""

    def __init__(self, tool_call_id: str, tool_name: str) -> None:
        self.message_id = str(uuid_utils.uuid7())
        self._base: dict[str, Any] = {"toolCallId": tool_call_id, "toolName": tool_name, "status": "running"}
        self._latest: dict[str, Any] = {}
        self._logs: list[dict[str, Any]] = []
        self._sent: dict[str, Any] | None = None
        self._changed = asyncio.Event()
        self._closed = False

    async def report(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """The ``ToolContext.progress`` hook: never blocks, never raises."""
        if self._closed or not math.isfinite(progress):
            return
        latest: dict[str, Any] = {"progress": progress}
        if total is not None and math.isfinite(total):
            latest["total"] = total
        if message:
            latest["message"] = message[:MAX_TEXT]
        self._latest = latest
        self._changed.set()

    def log(self, level: str, text: str, logger: str | None = None) -> None:
        """A log line of the running call (an MCP ``notifications/message``)."""
        if self._closed:
            return
        line = {"level": level, "message": text[:MAX_TEXT], **({"logger": logger} if logger else {})}
        self._logs = [*self._logs, line][-MAX_LOG_LINES:]
        self._changed.set()

    @property
    def started(self) -> bool:
        """Whether the client has been sent this activity."""
        return self._sent is not None

    def content(self) -> dict[str, Any]:
        return {**self._base, **self._latest, **({"logs": self._logs} if self._logs else {})}

    def pending(self) -> AgUiEvent | None:
        """The event that brings the client up to date, if it is behind; marks it sent."""
        self._changed.clear()
        content = self.content()
        if content == self._sent or (self._sent is None and not (self._latest or self._logs)):
            return None
        sent, self._sent = self._sent, content
        if sent is None:
            return ActivitySnapshot(
                message_id=self.message_id, activity_type=ACTIVITY_TYPE, content=content, timestamp=now_ms()
            )
        return ActivityDelta(
            message_id=self.message_id,
            activity_type=ACTIVITY_TYPE,
            patch=patch(sent, content),
            timestamp=now_ms(),
        )

    def finish(self, status: str) -> AgUiEvent | None:
        """Stop taking reports; the last event (with ``status``), if the call reported anything."""
        self._closed = True
        if self._sent is None and not (self._latest or self._logs):
            return None
        self._base["status"] = status
        return self.pending()

    async def changed(self) -> None:
        await self._changed.wait()


def patch(before: dict[str, Any], after: dict[str, Any]) -> list[PatchOperation]:
    """The RFC 6902 operations that turn ``before`` into ``after`` (top-level members; the log lines as
    appends, or the whole list once lines were dropped)."""
    operations: list[PatchOperation] = []
    for key in before.keys() - after.keys():
        operations.append(RemoveOperation(path=f"/{key}"))
    for key, value in after.items():
        old = before.get(key)
        if key not in before:
            operations.append(AddOperation(path=f"/{key}", value=value))
        elif value == old:
            continue
        elif key == "logs" and isinstance(old, list) and value[: len(old)] == old:
            operations += [AddOperation(path="/logs/-", value=line) for line in value[len(old) :]]
        else:
            operations.append(ReplaceOperation(path=f"/{key}", value=value))
    return operations


async def await_reporting(call: asyncio.Future[T], activity: ToolActivity, emit: Emit) -> T:
    """Wait for ``call``, sending its activity meanwhile from this task; cancelling this wait cancels the
    call too. Its result (or exception) once it ends; the last events are :meth:`ToolActivity.finish`'s."""
    try:
        while not call.done():
            changed = asyncio.ensure_future(activity.changed())
            try:
                await asyncio.wait((call, changed), return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()
            if call.done():
                break
            event = activity.pending()
            if event is not None:
                await emit(event)
                await asyncio.wait((call,), timeout=MIN_INTERVAL_SECONDS)
    except asyncio.CancelledError:
        call.cancel()
        raise
    return await call
