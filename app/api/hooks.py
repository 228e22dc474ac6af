"""The app's HTTP hooks: what runs once a request is routed, and CORS."""

from __future__ import annotations

from typing import Any, Literal

from litestar import Request
from litestar.config.cors import CORSConfig

from iris.app.api.json_depth import refuse_deep_json
from iris.app.errors import MigrationsPending
from iris.app.persistence.migrations import SchemaGate
from iris.app.settings import Settings
from iris.app.telemetry import Telemetry
from iris.app.telemetry.http import name_request_span

SCHEMA_FREE_PATHS = frozenset({"/", "/healthz", "/readyz", "/metrics"})
SCHEMA_FREE_PREFIXES = ("/schema", "/static/", "/chat/")
"""What answers without the database: probes, metrics, the API docs and the chat page's files."""


async def require_schema(request: Request[Any, Any, Any]) -> None:
    """503 ``migrations_pending`` for a request that would use a database whose schema is behind."""
    gate: SchemaGate | None = getattr(request.app.state, "schema_gate", None)
    if gate is None or gate.ready:
        return
    path = request.scope["path"]
    if path in SCHEMA_FREE_PATHS or path.startswith(SCHEMA_FREE_PREFIXES):
        return
    if not await gate.check():
        raise MigrationsPending()


def before_request(telemetry: Telemetry) -> Any:
    """What runs once a request is routed: its span is named by the route (when traced), a database
    behind the migrations is refused, and a JSON body nested too deeply is refused before anything
    decodes it."""
    traced = telemetry.provider is not None

    async def routed(request: Request[Any, Any, Any]) -> Any:
        if traced:
            name_request_span(request)
        await require_schema(request)
        return await refuse_deep_json(request)

    return routed


# What a browser on another origin may send, and which response headers its script may read.
CORS_METHODS: list[Literal["GET", "POST", "PATCH", "DELETE"]] = ["GET", "POST", "PATCH", "DELETE"]
CORS_REQUEST_HEADERS = ["Authorization", "Content-Type", "Last-Event-ID"]
CORS_EXPOSED_HEADERS = ["Location", "Retry-After", "Content-Disposition"]


def cors_config(settings: Settings) -> CORSConfig | None:
    """CORS for ``IRIS_CORS_ORIGINS``; none (same-origin only) when unset. No credentials: tokens
    travel in ``Authorization``, which a listed origin may send without cookies."""
    origins = settings.cors_origin_list
    if not origins:
        return None
    return CORSConfig(
        allow_origins=origins,
        allow_methods=list(CORS_METHODS),
        allow_headers=CORS_REQUEST_HEADERS,
        expose_headers=CORS_EXPOSED_HEADERS,
        allow_credentials=False,
        max_age=600,
    )
