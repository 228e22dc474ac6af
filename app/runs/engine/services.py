"""What every run shares, built once per app (:func:`iris.app.asgi.create_app`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from iris.app.catalogue.cache import CatalogueCache
from iris.app.media.pipeline import ImageDelivery
from iris.app.media.tool_media import MediaStore
from iris.app.runs.content.attachments import DEFAULT_PAGE_RENDERING, PageRendering
from iris.app.runs.intake.deadlines import Deadlines
from iris.app.runs.intake.fallbacks import Cooldowns
from iris.app.runs.intake.toolbox import Toolbox
from iris.app.storage.base import Storage
from iris.app.telemetry import Telemetry


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
    toolbox: Toolbox
    """Plugin tools and MCP connections."""
    media: MediaStore
    """Where tools' images and audio are stored, and the limits on a tool result."""
    cooldowns: Cooldowns | None = None
    """The shared record of models that keep failing (``None``: no cool-downs)."""
    url_ttl_seconds: int = 3600
    """Lifetime of the signed URLs a tool result's media carry in its event."""
    page_rendering: PageRendering = DEFAULT_PAGE_RENDERING
    """The PDF worker's bounds when scanned pages are rendered for a vision model (the fallback)."""
    audit_tool_arguments: bool = False
    """Keep tool calls' arguments in their audit rows (else redacted)."""
    catalogue: CatalogueCache = field(default_factory=CatalogueCache)
    """The process's copy of the catalogue, valid while its generation is current
    (iris.app.catalogue.cache)."""
