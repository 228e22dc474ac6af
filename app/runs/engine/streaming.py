"""The SSE responses of runs, shared by the AG-UI and chat surfaces: check and start a run and stream
it, or follow a run that is already going (re-attach)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any
from uuid import UUID

import msgspec
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar.response import Stream
from litestar.response.base import ASGIResponse
from litestar.response.streaming import ASGIStreamingResponse
from litestar.types import Send
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.agui.sse import HEADERS, Frame, FrameSource, LastChunk, relay
from iris.app.agui.ui_stream import HEADERS as UI_HEADERS
from iris.app.agui.ui_stream import UiChunks, ui_relay
from iris.app.errors import Unprocessable
from iris.app.media.inline_uploads import InlineUploads
from iris.app.persistence.db import holds_write_turn, session_scope
from iris.app.persistence.models import POSITION_MAX
from iris.app.persistence.repositories import IntakeRows, RunEventRepository, SessionRepository
from iris.app.runs.content.outputs import TRACEPARENT_KEY
from iris.app.runs.engine.manager import RunManager
from iris.app.runs.intake.plan import Repositories, RunPlan
from iris.app.runs.store.event_store import IntakeNotStored
from iris.app.runs.store.live import LoggedFrames
from iris.app.settings import Settings
from iris.app.telemetry import Telemetry


class Intake:
    """A run's intake transaction, in a session of its own rather than the request's.

    Refused (any exception inside ``async with``): rolled back and closed, nothing stored. Accepted:
    :func:`start_stream` hands it to the run, which starts the commit once the model is being asked
    (the flush and commit then overlap the vendor's latency instead of preceding it); the event store
    writes nothing before that commit, and a commit that fails ends the run with one ``RUN_ERROR``
    (:class:`~iris.app.runs.store.event_store.IntakeNotStored`) and nothing stored. The run's inline documents
    and audio (and images, where ``inline_images``: the AI SDK's surface) (``inline``) are stored as
    objects just before the hand-over; a refusal or a failed
    commit removes them again.
    """

    def __init__(self, manager: RunManager, settings: Settings, *, inline_images: bool = False) -> None:
        services = manager.services
        self.session: AsyncSession = services.alchemy.create_session_maker()()
        self.repos = Repositories(self.session, services.catalogue)
        self.inline = InlineUploads(services.storage, services.media.limiter, settings, images=inline_images)
        self._handed_over = False
        self._commit: asyncio.Future[None] | None = None
        self._rows: IntakeRows | None = None

    async def __aenter__(self) -> Intake:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if not self._handed_over:
            try:
                await self.session.rollback()
            finally:
                await self.session.close()
                await self.inline.discard()

    def start_commit(self) -> asyncio.Future[None]:
        """Start the commit (the first call; later ones return the same future), which fails with
        :class:`IntakeNotStored` and then stores nothing."""
        if self._commit is None:
            self._commit = asyncio.ensure_future(_commit(self.session, self._rows, self.inline))
        return self._commit

    def stage(self, rows: IntakeRows | None) -> None:
        """What the commit writes first: the accepted run's thread, run and messages."""
        self._rows = rows

    def hand_over(self) -> None:
        """The run owns the transaction now: leaving ``async with`` no longer rolls it back."""
        self._handed_over = True


async def _commit(session: AsyncSession, rows: IntakeRows | None, inline: InlineUploads) -> None:
    try:
        if rows is not None:
            await SessionRepository(session=session).write_intake(rows)
        await session.commit()  # what the ORM holds too: inline uploads, an answered interrupt
    except Exception as exc:  # the database failed, or a concurrent request took a unique key first
        await session.rollback()
        await inline.discard()
        raise IntakeNotStored(
            "run_not_stored",
            "The run could not be recorded, so nothing was stored; try again with a new runId.",
        ) from exc
    finally:
        await session.close()


async def start_stream(
    plan: RunPlan, intake: Intake, manager: RunManager, *, ping_seconds: float, ui: UiChunks | None = None
) -> Stream:
    """Start the run at once — its intake commits meanwhile — and stream it to this caller (409
    ``run_in_progress`` when this process is running the thread already): as AG-UI events, or as the AI
    SDK's UI message stream translated by ``ui``.

    An intake that has already written (a quota's count, an inline upload's row) holds SQLite's write
    turn, which no transaction may carry past the hand-over (docs/adr/0001-sqlite-write-turn.md): its
    commit starts now instead of when the model is asked."""
    intake.stage(plan.intake_rows)
    now = await holds_write_turn(intake.session)
    channel, subscription = manager.start(plan, intake=intake.start_commit)
    intake.hand_over()
    if now:
        intake.start_commit()
    on_close = partial(channel.unsubscribe, subscription)
    if ui is not None:
        chunks = ui_relay(subscription, chunks=ui, ping_seconds=ping_seconds, on_close=on_close)
        return sse(observed(chunks, manager.services.telemetry), UI_HEADERS)
    body = relay(subscription, ping_seconds=ping_seconds, on_close=on_close)
    return sse(observed(body, manager.services.telemetry))


def follow_stream(
    run_id: str,
    run_pk: UUID,
    manager: RunManager,
    alchemy: SQLAlchemyAsyncConfig,
    *,
    after: int,
    ping_seconds: float,
    snapshot: bytes | None = None,
    ui: UiChunks | None = None,
) -> Stream:
    """A run's events after ``after``, then live ones until its terminal event: from memory on the
    process running it, from the event log anywhere else (translated by ``ui`` for the AI SDK).
    ``snapshot`` (an event's JSON) goes out right after ``RUN_STARTED``, without an ``id:``, when the
    stream replays the run from its start."""
    channel = manager.channel(run_id)
    source: FrameSource
    on_close: Callable[[], None]
    traceparent: Callable[[], Awaitable[str | None]]
    if channel is not None:
        subscription = channel.subscribe(after=after)
        source, on_close = subscription, partial(channel.unsubscribe, subscription)
        traceparent = partial(_local_traceparent, manager.traceparent(run_id))
    else:
        logged = LoggedFrames(alchemy, run_pk, after=after, wakeups=manager.wakeups)
        source, on_close = logged, logged.close
        traceparent = partial(_logged_traceparent, alchemy, run_pk)
    if snapshot is not None and after == 0:
        source = AfterStart(source, snapshot)
    follows = (run_id, traceparent)
    if ui is not None:
        chunks = ui_relay(source, chunks=ui, ping_seconds=ping_seconds, on_close=on_close)
        return sse(observed(chunks, manager.services.telemetry, follows=follows), UI_HEADERS)
    body = relay(source, ping_seconds=ping_seconds, on_close=on_close)
    return sse(observed(body, manager.services.telemetry, follows=follows))


class AfterStart:
    """A :class:`FrameSource` that inserts one unnumbered frame after the run's first (``RUN_STARTED``):
    AG-UI streams must open with ``RUN_STARTED``."""

    def __init__(self, source: FrameSource, payload: bytes) -> None:
        self._source = source
        self._payload: bytes | None = payload

    async def next_batch(self, wait_seconds: float) -> list[Frame] | None:
        batch = await self._source.next_batch(wait_seconds)
        if batch and self._payload is not None:
            if _event_type(batch[0][1]) == "RUN_STARTED":  # not a run that failed before it started
                batch = [batch[0], (0, self._payload), *batch[1:]]
            self._payload = None
        return batch

    @property
    def exhausted(self) -> bool:
        return self._source.exhausted

    @property
    def parting(self) -> bytes | None:
        return self._source.parting


def _event_type(payload: bytes) -> object:
    try:
        event = msgspec.json.decode(payload)
    except msgspec.DecodeError:
        return None
    return event.get("type") if isinstance(event, dict) else None


def resume_point(last_event_id: str | None, after: int | None) -> int:
    """Where a re-attaching stream starts: ``Last-Event-ID`` wins over ``?after=``; 0 replays all."""
    value = last_event_id if last_event_id is not None else after
    try:
        point = int(value) if value is not None else 0
    except ValueError as exc:
        raise Unprocessable("Last-Event-ID must be an event number.", code="invalid_event_id") from exc
    if point < 0:
        raise Unprocessable("Event numbers start at 1.", code="invalid_event_id")
    if point > POSITION_MAX:
        raise Unprocessable(f"Event numbers end at {POSITION_MAX}.", code="invalid_event_id")
    return point


def sse(body: AsyncIterator[bytes], headers: dict[str, str] = HEADERS) -> Stream:
    return EventStream(body, media_type="text/event-stream", headers=headers)


class EventStream(Stream):
    """Litestar's ``Stream`` for a :func:`~iris.app.agui.sse.relay` body: its
    :class:`~iris.app.agui.sse.LastChunk`
    goes out with the response's end. Litestar ends a stream with an empty last body, which uvicorn
    writes on its own (the chunked terminator): a second socket write, and a second wake-up of the
    client, for every stream."""

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> ASGIResponse:
        response = super().to_asgi_response(*args, **kwargs)
        response.__class__ = _EventStreamResponse  # the same response; only its body's end differs
        return response


class _EventStreamResponse(ASGIStreamingResponse):
    __slots__ = ()

    async def _stream(self, send: Send) -> None:
        async for chunk in self.iterator:
            last = isinstance(chunk, LastChunk)
            body = chunk if isinstance(chunk, bytes) else chunk.encode(self.encoding)
            await send({"type": "http.response.body", "body": body, "more_body": not last})
            if last:
                if isinstance(self.iterator, AsyncGenerator):
                    await self.iterator.aclose()  # it has nothing more: its ``finally`` runs now
                return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def observed(
    body: AsyncGenerator[bytes, None],
    telemetry: Telemetry,
    *,
    follows: tuple[str, Callable[[], Awaitable[str | None]]] | None = None,
) -> AsyncIterator[bytes]:
    """``body``, counted as an open stream; a re-attach (``follows``: the run id, and how to find its
    ``traceparent``) also gets its ``follow_run`` span in the run's trace."""
    with telemetry.stream_open():
        run_id, find = follows if follows is not None else ("", None)
        traceparent = await find() if find is not None and telemetry.tracer is not None else None
        with telemetry.follow(run_id, traceparent):
            async with contextlib.aclosing(body) as chunks:
                async for chunk in chunks:
                    yield chunk


async def _local_traceparent(value: str | None) -> str | None:
    return value


async def _logged_traceparent(alchemy: SQLAlchemyAsyncConfig, run_pk: UUID) -> str | None:
    """The ``traceparent`` a run executing elsewhere logged in its ``RUN_STARTED``."""
    async with session_scope(alchemy) as db:
        first = await RunEventRepository(session=db).list_after(run_pk, 0, limit=1)
    metadata = first[0].event.get("metadata") if first else None
    value = metadata.get(TRACEPARENT_KEY) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) else None
