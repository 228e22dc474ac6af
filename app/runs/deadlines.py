"""Run deadlines, enforced in the core on the provider's event stream (so every provider, plugins
included, gets them): a first-token deadline per model turn, an idle deadline that only real progress
resets, and an overall deadline per run.

A vendor that answers 200 and then sends only SSE comments or keep-alives yields no provider events,
so it makes no progress here, whatever it does on the wire. The deadlines are settings
(``IRIS_*_TIMEOUT_SECONDS``) that a model's catalogue ``options`` may override with the keys in
:data:`DEADLINE_OPTIONS` — the one place the core reads them from.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

from app.errors import Unprocessable
from providers import ProviderEvent, TextStart
from providers import Warning as ProviderWarning

FIRST_TOKEN_OPTION = "firstTokenTimeoutSeconds"  # noqa: S105 (seconds, not a credential)
IDLE_OPTION = "idleTimeoutSeconds"
RUN_OPTION = "runTimeoutSeconds"
DEADLINE_OPTIONS = (FIRST_TOKEN_OPTION, IDLE_OPTION, RUN_OPTION)
"""Catalogue ``options`` keys (core options, not a vendor's) that override the deadline settings."""

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


def check_deadline_options(options: Mapping[str, Any]) -> None:
    """422 ``invalid_option`` unless every deadline override present is a positive number of seconds."""
    for key in DEADLINE_OPTIONS:
        if key not in options:
            continue
        value = options[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86_400:
            raise Unprocessable(
                f"'options.{key}' must be a number of seconds above 0 and at most 86400.",
                code="invalid_option",
                field=f"options.{key}",
            )


def is_progress(event: ProviderEvent) -> bool:
    """Whether an event is real progress: content, a tool call, usage or the finish. A bare start, an
    empty delta or a warning is not (a vendor could send those forever)."""
    if isinstance(event, TextStart | ProviderWarning):
        return False
    return getattr(event, "delta", None) != ""


async def paced(
    events: AsyncGenerator[ProviderEvent, None], deadlines: Deadlines
) -> AsyncGenerator[ProviderEvent, None]:
    """``events``, failing with :class:`DeadlineExceeded` when the first progress takes longer than
    ``first_token`` or the next one longer than ``idle``. The wait is cancelled on the spot and the
    provider's stream closed, which drops the vendor's connection."""
    loop = asyncio.get_running_loop()
    code, seconds = FIRST_TOKEN_CODE, deadlines.first_token
    deadline = loop.time() + seconds
    async with contextlib.aclosing(events):
        while True:
            try:
                async with asyncio.timeout_at(deadline) as timer:
                    event = await anext(events)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if timer.expired():
                    raise DeadlineExceeded(code, seconds) from None
                raise
            yield event
            if is_progress(event):
                code, seconds = IDLE_CODE, deadlines.idle
                deadline = loop.time() + seconds
