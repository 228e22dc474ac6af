"""The SSE responses of runs, shared by the AG-UI and chat surfaces: start a checked run and stream it,
or follow a run that is already going (re-attach)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial

from advanced_alchemy.exceptions import IntegrityError
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar.response import Stream
from sqlalchemy.exc import IntegrityError as SAIntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.agui.sse import HEADERS, FrameSource, relay
from app.errors import Conflict, Unprocessable
from app.persistence.models import Run
from app.runs.intake import RunPlan
from app.runs.live import LoggedFrames
from app.runs.manager import RunManager


async def start_stream(
    plan: RunPlan, db: AsyncSession, manager: RunManager, *, ping_seconds: float
) -> Stream:
    """Commit what intake recorded, start the run, and stream it to this caller."""
    try:
        await db.commit()
    except (IntegrityError, SAIntegrityError) as exc:  # a concurrent request took the runId first
        await db.rollback()
        raise Conflict("This runId was already used.", code="run_exists", field="runId") from exc
    channel, subscription = manager.start(plan)
    return _sse(
        relay(subscription, ping_seconds=ping_seconds, on_close=partial(channel.unsubscribe, subscription))
    )


def follow_stream(
    run: Run, manager: RunManager, alchemy: SQLAlchemyAsyncConfig, *, after: int, ping_seconds: float
) -> Stream:
    """A run's events after ``after``, then live ones until its terminal event: from memory on the
    process running it, from the event log anywhere else."""
    channel = manager.channel(run.external_id)
    source: FrameSource
    on_close: Callable[[], None]
    if channel is not None:
        subscription = channel.subscribe(after=after)
        source, on_close = subscription, partial(channel.unsubscribe, subscription)
    else:
        logged = LoggedFrames(alchemy, run.id, after=after, wakeups=manager.wakeups)
        source, on_close = logged, logged.close
    return _sse(relay(source, ping_seconds=ping_seconds, on_close=on_close))


def resume_point(last_event_id: str | None, after: int | None) -> int:
    """Where a re-attaching stream starts: ``Last-Event-ID`` wins over ``?after=``; 0 replays all."""
    value = last_event_id if last_event_id is not None else after
    try:
        point = int(value) if value is not None else 0
    except ValueError as exc:
        raise Unprocessable("Last-Event-ID must be an event number.", code="invalid_event_id") from exc
    if point < 0:
        raise Unprocessable("Event numbers start at 1.", code="invalid_event_id")
    return point


def _sse(body: AsyncIterator[bytes]) -> Stream:
    return Stream(body, media_type="text/event-stream", headers=HEADERS)
