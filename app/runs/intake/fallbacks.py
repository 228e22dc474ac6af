"""Retries and fallbacks: what a run does when its model fails before any content reached the client.

A retryable failure (:func:`retryable_code`: 429, 5xx and overload, a dropped connection, no first
token in time) is tried again on the same model, with a jittered exponential backoff that honours the
vendor's ``Retry-After`` and never waits past the turn's first-token deadline (:class:`RetryPolicy`).
When the model's tries are spent, the run's first turn moves on to the next of the model's
``fallbacks`` that suits the request (:class:`ModelChoice`, chosen before any I/O by
:func:`fallback_choices`); once content has streamed a run never switches. Every retryable failure is
counted in ``model_cooldowns`` (:class:`Cooldowns`): a model that keeps failing is cooled down for a
while, and every process then starts runs with fallbacks on the next model instead.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from iris.app.catalogue.cache import ModelLookup
from iris.app.catalogue.views import model_spec
from iris.app.errors import IrisError, Unprocessable
from iris.app.media.pipeline import check_images
from iris.app.persistence.db import session_scope
from iris.app.persistence.models import Message as MessageRow
from iris.app.persistence.models import ModelRow
from iris.app.persistence.repositories import CooldownRepository
from iris.app.runs.content.attachments import check_new_attachments
from iris.app.runs.content.context import check_request_fits, sent_images
from iris.app.runs.content.reasoning import ReasoningControl
from iris.app.runs.intake.deadlines import FIRST_TOKEN_CODE, DeadlineExceeded
from iris.app.runs.intake.knobs import check_parameters
from iris.app.runs.intake.resolution import RunnableModel, runnable
from iris.app.settings import Settings
from iris.app.telemetry import Telemetry
from iris.providers import Capabilities, ModelSpec, Provider, ProviderError, RequestOptions, ToolSpec
from iris.providers.registry import ProviderRegistry
from iris.providers.wire import WireStruct

log = logging.getLogger("iris.runs")
T = TypeVar("T")

MODEL_KEY = "iris/model"
"""On ``RUN_STARTED``: the model the run starts on; on ``RUN_FINISHED``: the model that answered; on
``RUN_ERROR``: the last model tried (``provider/modelId``)."""
ATTEMPTS_KEY = "iris/attempts"
"""On ``RUN_FINISHED`` and ``RUN_ERROR``, when any: the requests that failed and were retried or moved
on from, and the models skipped while cooled down, in order (:class:`Attempt`); on ``RUN_STARTED``,
when the run starts on a fallback: the cooled-down models it skipped."""
COOLING_DOWN = "model_cooling_down"
"""An :class:`Attempt`'s code for a model skipped because it is cooled down (no request was made)."""

_RETRYABLE_KINDS = frozenset({"rate_limit", "unavailable"})


class Attempt(WireStruct):
    """One failed request of a run (or one model skipped while cooled down): which model, and the
    run-error code it would have ended the run with."""

    model: str
    code: str


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Requests per model turn (the first included) and the first wait between two of them."""

    attempts: int = 1
    backoff_seconds: float = 0.0

    def delay(self, retry: int, retry_after: float | None) -> float:
        """The wait before retry number ``retry`` (1, 2, …): the backoff doubled each time, ±50 %
        jitter so that processes hit by the same outage do not retry in step; a vendor's longer
        ``Retry-After`` wins."""
        backoff = self.backoff_seconds * 2 ** (retry - 1) * random.uniform(0.5, 1.5)  # noqa: S311 (jitter)
        return float(max(backoff, retry_after or 0.0))


NO_RETRIES = RetryPolicy()


def retry_policy(row: ModelRow, settings: Settings) -> RetryPolicy:
    """The model's own policy, else the settings'."""
    return RetryPolicy(
        attempts=row.retry_attempts if row.retry_attempts is not None else settings.retry_attempts,
        backoff_seconds=row.retry_backoff_seconds
        if row.retry_backoff_seconds is not None
        else settings.retry_backoff_seconds,
    )


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model a run may answer with: its provider, its effective capabilities and what the run's
    request becomes for it (its reasoning request is built from its own options)."""

    provider: Provider
    model: ModelSpec
    model_ref: str
    capabilities: Capabilities
    reasoning: ReasoningControl
    retry: RetryPolicy


def retryable_code(exc: BaseException) -> str | None:
    """The run-error code of a failure worth trying again (elsewhere), or ``None``: a vendor's 429,
    5xx or overload, a connection it dropped, or no first token within the deadline. A refused key or
    request would fail the same way again."""
    if isinstance(exc, ProviderError) and exc.kind in _RETRYABLE_KINDS:
        return f"provider_{exc.kind}"
    if isinstance(exc, DeadlineExceeded) and exc.code == FIRST_TOKEN_CODE:
        return exc.code
    return None


def retry_after(exc: BaseException) -> float | None:
    """The vendor's ``Retry-After`` (seconds), when it sent one."""
    return exc.retry_after if isinstance(exc, ProviderError) else None


Suits = Callable[[RunnableModel], ReasoningControl]
"""Checks a fallback against the run's request as the first model was checked (images, audio, tools, knobs,
reasoning, request size), raising the same :class:`~iris.app.errors.IrisError` when it does not suit; its
reasoning request when it does."""


@dataclass(frozen=True, slots=True)
class Request:
    """What a run's request needs of any model that answers it (the first model took it all)."""

    history: Sequence[MessageRow]
    deleted: frozenset[str]
    system: str | None
    tools: Sequence[ToolSpec]
    new_images: Sequence[str]
    """MIME types of the images in the run's new messages (checked as for the first model)."""
    new_messages: Sequence[MessageRow]
    """The run's new messages: audio in them needs a fallback that hears it (documents always go)."""
    first_capabilities: Capabilities
    """The first model's: when its request shows the thread's images, a text model would lose them."""
    options: RequestOptions
    wants_reasoning: bool
    storage_publicly_reachable: bool

    def suits(self, reasoning: Callable[[RunnableModel], ReasoningControl]) -> Suits:
        """The :data:`Suits` check of this request; ``reasoning`` builds a model's reasoning request."""

        def check(model: RunnableModel) -> ReasoningControl:
            caps, ref = model.capabilities, model.row.ref
            if not caps.vision and sent_images(self.history, self.first_capabilities, self.deleted):
                raise Unprocessable(f"{ref} cannot see the thread's images.", code="model_lacks_vision")
            check_images(caps, self.new_images, model_ref=ref)
            check_new_attachments(self.new_messages, caps, model_ref=ref)
            if self.tools and not caps.tools:
                raise Unprocessable(f"{ref} cannot call tools.", code="model_lacks_tools")
            check_parameters(caps, self.options, model_ref=ref)
            control = reasoning(model)
            if self.wants_reasoning and control.request is None:
                raise Unprocessable(f"{ref} cannot reason.", code="reasoning_unsupported")
            check_request_fits(
                caps,
                self.history,
                self.system,
                self.tools,
                deleted=self.deleted,
                storage_publicly_reachable=self.storage_publicly_reachable,
                model_ref=ref,
            )
            return control

        return check


async def fallback_choices(
    row: ModelRow,
    *,
    models: ModelLookup,
    registry: ProviderRegistry,
    settings: Settings,
    allowed: Callable[[ModelRow], bool],
    suits: Suits,
) -> tuple[ModelChoice, ...]:
    """The model's ``fallbacks`` the run may move to, in order: enabled catalogue models the caller may
    run (``allowed``: the agent offers them), whose provider and key are there, and which take the
    request (``suits``). The rest are skipped, each with a log line saying why; nothing is an error."""
    choices: list[ModelChoice] = []
    for ref in row.fallbacks or ():
        fallback = await models.get_by_ref(ref)
        if fallback is None or not fallback.enabled:
            log.info("fallback %s of %s skipped: not an enabled catalogue model", ref, row.ref)
            continue
        if not allowed(fallback):
            log.info("fallback %s of %s skipped: the caller may not run it", ref, row.ref)
            continue
        await registry.ready([fallback.provider])  # loaded off the loop if nothing loaded it yet
        try:
            model = runnable(fallback, registry, settings)
            reasoning = suits(model)
        except IrisError as exc:
            log.info("fallback %s of %s skipped: %s [%s]", ref, row.ref, exc.detail, exc.code)
            continue
        choices.append(
            ModelChoice(
                provider=model.provider,
                model=model_spec(fallback),
                model_ref=fallback.ref,
                capabilities=model.capabilities,
                reasoning=reasoning,
                retry=retry_policy(fallback, settings),
            )
        )
    return tuple(choices)


class Cooldowns:
    """The shared record of failing models (``model_cooldowns``), through sessions of its own: a
    run's bookkeeping never fails the run (a database error is logged and ignored)."""

    def __init__(
        self,
        alchemy: SQLAlchemyAsyncConfig,
        telemetry: Telemetry,
        *,
        failures: int,
        seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._alchemy = alchemy
        self._telemetry = telemetry
        self._failures = failures
        self._seconds = seconds
        self._clock = clock

    async def cooled(self, refs: Collection[str]) -> set[str]:
        """Which of ``refs`` are cooled down now."""
        if self._seconds <= 0 or not refs:
            return set()
        return await self._safely(lambda repo: repo.cooled(refs, self._clock()), set())

    async def failed(self, ref: str, code: str) -> None:
        """Count a retryable failure of ``ref`` (with its run-error ``code``); cooling it down counts in
        ``iris_model_cooldowns``."""
        if self._seconds <= 0:
            return
        now = self._clock()
        started = await self._safely(
            lambda repo: repo.record_failure(
                ref, now, code=code, window=self._seconds, threshold=self._failures
            ),
            False,
        )
        if started:
            log.warning("model %s cooled down for %g s: it kept failing", ref, self._seconds)
            self._telemetry.record_cooldown(ref)

    async def _safely(self, work: Callable[[CooldownRepository], Awaitable[T]], otherwise: T) -> T:
        try:
            async with session_scope(self._alchemy) as db:
                return await work(CooldownRepository(session=db))
        except Exception as exc:  # bookkeeping: the run goes on without it
            log.warning("model cool-downs not read or written: %s: %s", type(exc).__name__, exc)
            return otherwise


class AttemptLog:
    """A run's failed attempts as they happen (``iris/attempts``), each also counted towards its
    model's cool-down."""

    def __init__(self, cooldowns: Cooldowns | None) -> None:
        self._cooldowns = cooldowns
        self.attempts: list[Attempt] = []

    async def failed(self, ref: str, code: str) -> None:
        self.attempts.append(Attempt(model=ref, code=code))
        if self._cooldowns is not None:
            await self._cooldowns.failed(ref, code)

    def skipped(self, ref: str) -> None:
        """``ref`` was not tried: it is cooled down."""
        self.attempts.append(Attempt(model=ref, code=COOLING_DOWN))


def attempts_metadata(model_ref: str, attempts: Sequence[Attempt]) -> dict[str, object]:
    """``iris/model`` and, when any, ``iris/attempts`` for an event's metadata."""
    out: dict[str, object] = {MODEL_KEY: model_ref}
    if attempts:
        out[ATTEMPTS_KEY] = [{"model": a.model, "code": a.code} for a in attempts]
    return out
