"""Debug-only probes, mounted only when ``IRIS_DEBUG`` is set (bench/soak.py reads them)."""

from __future__ import annotations

from litestar import Controller, get
from litestar.datastructures import State

from iris.app.schemas.system import LoopStats


class DebugController(Controller):
    """Internals worth watching under load; never mounted in production (no auth)."""

    tags = ["Debug"]
    include_in_schema = False

    @get("/debug/loop", operation_id="DebugLoop")
    async def loop(self, state: State) -> LoopStats:
        """The event loop's worst stall since start-up (see ``iris.app.api.loop_monitor``)."""
        monitor = state.loop_monitor
        return LoopStats(
            max_stall_ms=round(monitor.max_stall * 1000, 1),
            max_blocked_ms=round(monitor.max_blocked * 1000, 1),
            stalls=monitor.stalls,
            warn_ms=monitor.warn_seconds * 1000,
            worst_stack=monitor.worst_stack,
        )
