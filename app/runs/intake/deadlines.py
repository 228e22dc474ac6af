"""Run deadlines, enforced in the core on the provider's event stream (so every provider, plugins
included, gets them): a first-token deadline per model turn, an idle deadline that only real progress
resets, and an overall deadline per run.

A vendor that answers 200 and then sends only SSE comments or keep-alives yields no provider events,
so it makes no progress here, whatever it does on the wire. The deadlines are settings
(``IRIS_*_TIMEOUT_SECONDS``) that a model's catalogue ``options`` may override with the keys in
:data:`iris.app.catalogue.options.DEADLINE_OPTIONS` — the one place the core reads them from.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

from iris.app.catalogue.options import FIRST_TOKEN_OPTION, IDLE_OPTION, RUN_OPTION
from iris.providers import ProviderEvent, ReasoningDelta, ReasoningStart, TextDelta, TextStart, ToolCallArgs
from iris.providers import Warning as ProviderWarning

FIRST_TOKEN_CODE = "provider_timeout"  # noqa: S105 (an error code)
IDLE_CODE = "provider_idle_timeout"
RUN_CODE = "run_timeout"

MESSAGES = {
    FIRST_TOKEN_CODE: "The model provider did not start answering in time.",
    IDLE_CODE: "The model provider stopped sending its answer.",
    RUN_CODE: "The run took longer than it is allowed to.",
}


class DeadlineExceeded(Exception):
    """A run deadline passed; ``code`` says which one."""

    def __init__(self, code: str, seconds: float) -> None:
        super().__init__(f"{code} after {seconds:g} s")
        self.code = code
        self.seconds = seconds


@dataclass(frozen=True, slots=True)
class Deadlines:
    """Seconds allowed: before a turn's first progress, between two progress events, for a whole run."""

    first_token: float
    idle: float
    run: float

    def for_model(self, options: Mapping[str, Any]) -> Deadlines:
        """These deadlines with the model's ``options`` overrides applied (checked when stored)."""
        return Deadlines(
            first_token=float(options.get(FIRST_TOKEN_OPTION, self.first_token)),
            idle=float(options.get(IDLE_OPTION, self.idle)),
            run=float(options.get(RUN_OPTION, self.run)),
        )


_NOT_PROGRESS = (TextStart, ReasoningStart, ProviderWarning)
"""Type tuples for ``isinstance`` are made once here and below: ``A | B`` in a call builds a union object
every time it runs (an ``AttributeError`` raised and caught inside), and these checks run per event."""
_DELTAS = (TextDelta, ReasoningDelta, ToolCallArgs)
"""The events that carry a ``delta`` (asking the others with ``getattr`` raised, and caught, an
``AttributeError`` each time)."""


def is_progress(event: ProviderEvent) -> bool:
    """Whether an event is real progress: content (thinking included), a tool call, usage or the finish.
    A bare start, an empty delta or a warning is not (a vendor could send those forever)."""
    if isinstance(event, _NOT_PROGRESS):
        return False
    if isinstance(event, _DELTAS):
        return event.delta != ""
    return True


class _Watchdog:
    """One timer for a whole stream, armed only while the stream is awaited.

    Progress just moves ``deadline``; a timer that fires before it re-arms itself for the new time, so
    a fast stream costs a clock read per event, not a timer. Firing while the consumer (not the vendor)
    has the task does nothing: the next wait checks the deadline itself.
    """

    def __init__(self, task: asyncio.Task[Any], code: str, seconds: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.task = task
        self.code, self.seconds = code, seconds
        self.deadline = self.loop.time() + seconds
        self.waiting = False
        self.fired = False
        self._timer: asyncio.TimerHandle | None = None

    def restart(self, code: str, seconds: float) -> None:
        self.code, self.seconds = code, seconds
        self.deadline = self.loop.time() + seconds
        if self._timer is not None and self._timer.when() > self.deadline:
            self._timer.cancel()  # an idle deadline shorter than the first-token one: the next wait re-arms
            self._timer = None

    def wait(self) -> None:
        """About to await the stream: fail if the deadline passed meanwhile, else make sure a timer runs."""
        if self.loop.time() >= self.deadline:
            raise DeadlineExceeded(self.code, self.seconds)
        self.waiting = True
        if self._timer is None:
            self._timer = self.loop.call_at(self.deadline, self._fire)

    def _fire(self) -> None:
        self._timer = None
        if self.loop.time() < self.deadline:
            self._timer = self.loop.call_at(self.deadline, self._fire)
        elif self.waiting:
            self.fired = True
            self.task.cancel()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


async def paced(
    events: AsyncGenerator[ProviderEvent, None], deadlines: Deadlines
) -> AsyncGenerator[ProviderEvent, None]:
    """``events``, failing with :class:`DeadlineExceeded` when the first progress takes longer than
    ``first_token`` or the next one longer than ``idle``. The wait is cancelled on the spot and the
    provider's stream closed, which drops the vendor's connection."""
    task = asyncio.current_task()
    assert task is not None
    watchdog = _Watchdog(task, FIRST_TOKEN_CODE, deadlines.first_token)
    try:
        async with contextlib.aclosing(events):
            while True:
                watchdog.wait()
                cancelling = task.cancelling()
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    return
                except asyncio.CancelledError:
                    if watchdog.fired and task.uncancel() <= cancelling:
                        raise DeadlineExceeded(watchdog.code, watchdog.seconds) from None
                    raise
                finally:
                    watchdog.waiting = False
                yield event
                if is_progress(event):
                    watchdog.restart(IDLE_CODE, deadlines.idle)
    finally:
        watchdog.close()
