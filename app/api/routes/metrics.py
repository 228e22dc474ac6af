"""``GET /metrics``: Prometheus's scrape of this process (or, in multiprocess mode, of all of them)."""

from __future__ import annotations

import anyio
from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIType, Schema

from iris.app.api.openapi import documented
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.app.telemetry.metrics import exposition

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class MetricsController(Controller):
    """Mounted on the main port unless ``IRIS_METRICS_ADDRESS`` gives metrics a listener of their own."""

    tags = ["Operations"]
    security = [{"BearerToken": []}]
    signature_types = [Principal]

    @get(
        "/metrics",
        operation_id="Metrics",
        operation_class=documented(
            ok={PROMETHEUS_TEXT: Schema(type=OpenAPIType.STRING)}, problems={403: ["admin_required"]}
        ),
    )
    async def metrics(
        self, admin: NamedDependency[Principal], settings: NamedDependency[Settings]
    ) -> Response[bytes]:
        """Every metric family in Prometheus's text format (admins; see docs/operations.md)."""
        # Merging the multiprocess files reads the disk: off the event loop.
        body, content_type = await anyio.to_thread.run_sync(exposition, settings.prometheus_multiproc_dir)
        return Response(body, media_type=content_type)
