"""Questions an MCP tool asks the user in the middle of a call (elicitation), and the calls that wait for
the answers.

A server asks through ``elicitation/create`` (the 2025-11-25 revision) or an ``input_required`` result
that the SDK answers by retrying the call (2026-07-28); the SDK hands both to one callback. The call
then stays open on the process that made it (:class:`AskedCall`), while the run that made it ends with
an interrupt (:class:`InputRequired` carries the :class:`Question`). The resuming run gives the
user's :class:`Answer` to the waiting call (:func:`answer`) and waits for what the call does next: its
result, or another question. A question nobody answers within the interrupt TTL is answered
``cancel``; one whose call is not in this process (another process made it, or this one restarted) is
reported as lost. See ADR 0077.

This module imports nothing from the MCP SDK: the run engine imports it, and the SDK is loaded only with
the first connection (:mod:`iris.app.mcp.pool`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Coroutine, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

import uuid_utils

from iris.tools import ToolFailed, ToolResult

log = logging.getLogger("iris.mcp")

Action = Literal["accept", "decline", "cancel"]
ELICITATION_KEY = "iris/elicitation"
"""The interrupt metadata key of a question's details (server, mode, URL)."""
FLAT_TYPES = {"string", "number", "integer", "boolean", "array"}


@dataclass(frozen=True, slots=True)
class Question:
    """One question a server asked: ``id`` is the interrupt's; ``schema`` the form's (form mode) or
    ``url`` the page to visit (URL mode), or the authorization URL to sign in at (``authorize``: the
    server needs the user's own sign-in, :mod:`iris.app.mcp.oauth`)."""

    id: str
    server: str
    tool: str
    mode: Literal["form", "url", "authorize"]
    message: str
    expires_at: dt.datetime
    schema: dict[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """What the user said: accept (with the form's content), decline, or cancel."""

    action: Action
    content: dict[str, Any] | None = None


class InputRequired(Exception):
    """A call paused for the user's answer: the run ends with an ``input_required`` interrupt."""

    def __init__(self, question: Question) -> None:
        super().__init__(question.message)
        self.question = question


_current: ContextVar[AskedCall | None] = ContextVar("iris_mcp_asked_call", default=None)
_waiting: dict[str, AskedCall] = {}
"""Calls waiting for an answer in this process, by the id of the question they asked."""


@dataclass(eq=False, slots=True)
class AskedCall:
    """One MCP call that may ask questions: its task, the questions it asked, and the answer it awaits.
    ``ttl_seconds``: how long a question waits for its answer (the interrupt TTL)."""

    server: str
    tool: str
    ttl_seconds: float
    task: asyncio.Task[ToolResult] | None = None
    questions: asyncio.Queue[Question] = field(default_factory=asyncio.Queue)
    answers: dict[str, asyncio.Future[Answer]] = field(default_factory=dict)
    asking: bool = False

    def start(self, call: Coroutine[Any, Any, ToolResult]) -> None:
        """Run the call in a task of its own, in whose context questions are known to be this call's."""
        token = _current.set(self)
        try:
            self.task = asyncio.get_running_loop().create_task(call, name=f"mcp call {self.tool}")
        finally:
            _current.reset(token)
        self.task.add_done_callback(_forget_result)

    async def next(self, timeout_seconds: float) -> ToolResult:
        """The call's result, or :class:`InputRequired` when it asks first; ``timeout_seconds`` bounds
        the server's own time (the call is cancelled, and the server told, when it runs out)."""
        assert self.task is not None
        asked = asyncio.ensure_future(self.questions.get())
        try:
            done, _ = await asyncio.wait(
                {self.task, asked}, timeout=timeout_seconds, return_when="FIRST_COMPLETED"
            )
        except asyncio.CancelledError:
            self.task.cancel()  # the run is stopped: so is its call (the SDK tells the server)
            raise
        finally:
            if not asked.done():
                asked.cancel()
        if asked in done:
            raise InputRequired(asked.result())
        if self.task in done:
            return self.task.result()
        self.task.cancel()
        raise ToolFailed(f"{self.tool} did not answer within {timeout_seconds:g} s (cancelled)")

    async def ask(self, question: Question) -> Answer:
        """Called from the connection's elicitation callback: put the question to the run, and wait
        (bounded by the TTL) for the answer; unanswered, the server hears ``cancel``."""
        future = self.put(question)
        try:
            async with asyncio.timeout(self.ttl_seconds):
                return await future
        except TimeoutError:
            log.info("mcp %s: question %s expired unanswered", self.server, question.id)
            return Answer("cancel")
        finally:
            self.settle(question.id)

    def put(self, question: Question) -> asyncio.Future[Answer]:
        """Put the question to the run (it ends with the question's interrupt); the future gets the
        resuming run's answer (:func:`answer`) until :meth:`settle` is called."""
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.answers[question.id] = future
        _waiting[question.id] = self
        self.asking = True
        self.questions.put_nowait(question)
        return future

    def settle(self, question_id: str) -> None:
        """The question is no longer waiting for an answer."""
        self.asking = False
        self.answers.pop(question_id, None)
        _waiting.pop(question_id, None)


def current_call(in_flight: list[AskedCall]) -> AskedCall | None:
    """The call a question belongs to: the one whose task asks (a 2026-07-28 ``input_required``
    retry runs in the call's own task), else the only call in flight on the connection (an
    ``elicitation/create`` arrives on the connection's task and names no call); none when unknown."""
    found = _current.get()
    if found is not None:
        return found
    candidates = [call for call in in_flight if not call.asking]
    return candidates[0] if len(candidates) == 1 else None


def new_question(call: AskedCall, *, mode: str, message: str, **details: Any) -> Question:
    """A question with a fresh interrupt id, expiring with the interrupt TTL."""
    expires = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=call.ttl_seconds)
    return Question(
        id=f"int_{uuid_utils.uuid7()}",
        server=call.server,
        tool=call.tool,
        mode="url" if mode == "url" else "authorize" if mode == "authorize" else "form",
        message=message,
        expires_at=expires.replace(microsecond=0),
        **details,
    )


async def answer(question_id: str, given: Answer, timeout_seconds: float) -> ToolResult:
    """Give the user's answer to the call waiting in this process, and wait for what it does next (its
    result, or :class:`InputRequired` again); :class:`ToolFailed` when no call here waits for it."""
    call = _waiting.get(question_id)
    future = call.answers.get(question_id) if call is not None else None
    if call is None or future is None or future.done():
        raise ToolFailed(
            "the call that asked this question is no longer waiting (it was made by another Iris process,"
            " or this one restarted): call the tool again"
        )
    future.set_result(given)
    await asyncio.sleep(0)  # let the callback hand the answer over before waiting for the call
    started = time.monotonic()
    result = await call.next(timeout_seconds)
    log.debug("mcp %s: answered call finished in %.1f s", call.server, time.monotonic() - started)
    return result


async def visit_pages(call: AskedCall, data: Any) -> bool:
    """A call refused with -32042 (URL elicitation required, 2025-11-25): put each page in ``data``
    (``{"elicitations": [{url, message, elicitationId}]}``) to the user in turn; whether the user
    accepted them all (then the call is made again, as the spec says)."""
    pages = data.get("elicitations") if isinstance(data, Mapping) else None
    if not isinstance(pages, list) or not pages:
        return False
    for page in pages:
        if not isinstance(page, Mapping) or not isinstance(page.get("url"), str):
            return False
        question = new_question(
            call,
            mode="url",
            message=str(page.get("message") or "Open this page to continue."),
            url=page["url"],
            elicitation_id=page.get("elicitationId"),
        )
        if (await call.ask(question)).action != "accept":
            return False
    return True


def answer_from(status: str, payload: Any) -> Answer:
    """A resume entry as an elicitation answer: ``cancelled`` is ``cancel``; ``resolved`` is
    ``payload.action`` (``accept`` when absent, or ``decline``) with ``payload.content`` (the form)."""
    if status == "cancelled":
        return Answer("cancel")
    given = payload if isinstance(payload, Mapping) else {}
    action = given.get("action", "accept")
    content = given.get("content")
    if action not in ("accept", "decline"):
        raise ValueError("'action' must be accept or decline (or resume with status cancelled)")
    if content is not None and not isinstance(content, Mapping):
        raise ValueError("'content' must be an object of the form's fields")
    return Answer(action, dict(content) if content is not None and action == "accept" else None)


def form_problem(schema: Mapping[str, Any] | None, content: Mapping[str, Any] | None) -> str | None:
    """Why accepted form content does not fit the server's flat schema (a field missing, or of the
    wrong kind); ``None`` when it fits."""
    if schema is None:
        return None
    fields: Mapping[str, Any] = schema.get("properties") or {}
    given = content or {}
    for name in schema.get("required") or ():
        if name not in given:
            return f"the field {name!r} is required"
    kinds: dict[str, type | tuple[type, ...]] = {
        "string": str,
        "boolean": bool,
        "integer": int,
        "number": (int, float),
        "array": list,
    }
    for name, value in given.items():
        kind = (fields.get(name) or {}).get("type")
        expected = kinds.get(kind) if isinstance(kind, str) else None
        if expected is None:
            continue
        wrong_bool = isinstance(value, bool) and kind in ("integer", "number")
        if wrong_bool or not isinstance(value, expected):
            return f"the field {name!r} must be a {kind}"
    return None


def _forget_result(task: asyncio.Task[ToolResult]) -> None:
    """A call whose run ended before it did (expired, or nobody came back): its outcome is dropped."""
    if not task.cancelled():
        with contextlib.suppress(BaseException):
            task.exception()
