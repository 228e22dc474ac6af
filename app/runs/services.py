"""What every run shares, built once per app (:func:`app.asgi.create_app`)."""

from __future__ import annotations

from dataclasses import dataclass

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from app.media.pipeline import ImageDelivery
from app.runs.deadlines import Deadlines
from app.storage.base import Storage
from app.telemetry import Telemetry


@dataclass(frozen=True, slots=True)
class RunServices:
    """What runs share, built once per app."""

    alchemy: SQLAlchemyAsyncConfig
    storage: Storage
    delivery: ImageDelivery
    interrupt_ttl_seconds: int
    deadlines: Deadlines
    """The deadline settings; a model's ``options`` may override them."""
    telemetry: Telemetry
    """Metrics and spans of runs, model turns and tool calls, and the retry/fallback hooks."""
