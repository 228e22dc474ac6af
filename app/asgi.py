"""The application factory: everything is built here from an explicit :class:`Settings`."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import httpx
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar, Request
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.openapi.spec import Components, SecurityScheme
from sqlalchemy.exc import SQLAlchemyError

from app.api.allow import truthful_allow
from app.api.deps import DEPENDENCIES
from app.api.json_depth import refuse_deep_json
from app.api.loop_monitor import LoopMonitor
from app.api.openai.errors import EXCEPTION_HANDLERS_BY_SURFACE
from app.api.openapi import IrisOpenAPIConfig
from app.api.routes import route_handlers
from app.api.routes.debug import DebugController
from app.api.routes.metrics import MetricsController
from app.api.routes.web import static_routers, swagger_plugin
from app.catalogue.agent_tools import KnownTools
from app.catalogue.defaults import seed_catalogue
from app.catalogue.models_file import ModelsFileError, apply_models_file, load_models_file
from app.errors import MigrationsPending
from app.mcp.pool import McpPool
from app.media.pipeline import ImageDelivery
from app.media.tool_media import MediaStore, ResultLimits
from app.media.uploads import DECODE_SLOTS
from app.media.variants import VariantCache
from app.persistence.availability import cause
from app.persistence.db import create_alchemy_config, session_scope
from app.persistence.migrations import SchemaGate
from app.persistence.repositories import ModelRepository
from app.persistence.search_indexer import SearchIndexer
from app.runs import (
    FOLLOW_POLL_SECONDS,
    Cooldowns,
    Deadlines,
    FollowerLimits,
    PageRendering,
    RunManager,
    RunServices,
    Toolbox,
    log_wakeups,
)
from app.security.url_policy import UrlPolicy
from app.settings import Settings, SettingsError, load_settings, prepare
from app.storage.factory import create_storage
from app.telemetry import Telemetry, build_telemetry
from app.telemetry.http import http_middleware, name_request_span
from app.telemetry.listener import MetricsListener
from app.telemetry.logs import litestar_logging
from app.telemetry.metrics import process_exited
from app.vendor_http import vendor_http_client
from providers import ProviderContext
from providers.registry import ProviderRegistry
from tools import ToolPluginContext
from tools.registry import ToolRegistry

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger("iris")


def build_registry(
    settings: Settings, environ: Mapping[str, str], http: httpx.AsyncClient
) -> ProviderRegistry:
    """The provider registry; providers see vendor variables only, never Iris's own settings (the JWT
    secret, …)."""
    vendor_environ = {k: v for k, v in environ.items() if not k.startswith("IRIS_")}
    return ProviderRegistry(
        ProviderContext(environ=vendor_environ, http=http), allow=settings.provider_allow_list
    )


def build_tool_directory(tool_registry: ToolRegistry | None = None) -> KnownTools:
    """The tools an agent may list as far as they are known without the database: every plugin tool
    (the built-ins among them; names only, nothing is loaded), and any MCP server (the agents API and
    the models file's apply add the catalogue's servers, :meth:`KnownTools.with_servers`)."""
    registry = tool_registry or ToolRegistry(ToolPluginContext(environ={}))
    return KnownTools.of(registry.names, servers=None)


def build_toolbox(
    settings: Settings, environ: Mapping[str, str], tool_registry: ToolRegistry | None = None
) -> Toolbox:
    """Plugin tools (``iris.tools``) and the MCP pool; both see the environment without ``IRIS_*``
    (``${VAR}`` in MCP headers and env is read from it)."""
    outside = {k: v for k, v in environ.items() if not k.startswith("IRIS_")}
    return Toolbox(
        tool_registry or ToolRegistry(ToolPluginContext(environ=outside)),
        McpPool(
            outside, tools_ttl_seconds=settings.mcp_tools_ttl_seconds, log_dir=settings.data_path / "mcp"
        ),
    )


def create_app(
    settings: Settings | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    registry: ProviderRegistry | None = None,
    tool_registry: ToolRegistry | None = None,
    span_exporter: SpanExporter | None = None,
) -> Litestar:
    """Build the Litestar app; with no settings, read them from ``IRIS_*`` now (not at import).

    ``environ`` is where providers read vendor keys (``OPENAI_API_KEY`` …) and MCP servers their
    ``${VAR}``s, the process environment by default; tests pass their own, or a whole ``registry``
    (and ``tool_registry``), and ``span_exporter`` to trace into (tracing is otherwise on only when the
    ``OTEL_*`` settings configure it).
    """
    settings = prepare(settings if settings is not None else load_settings(os.environ))
    telemetry = build_telemetry(settings, span_exporter=span_exporter)
    http = vendor_http_client(http2=settings.vendor_http2)
    environ = os.environ if environ is None else environ
    if registry is None:
        registry = build_registry(settings, environ, http)
    toolbox = build_toolbox(settings, environ, tool_registry)
    if warning := settings.public_url_warning:
        log.warning(warning)
    alchemy = create_alchemy_config(settings, write_wait=telemetry.write_wait)
    search_indexer = SearchIndexer(alchemy, every_seconds=settings.search_index_seconds)
    untrace_database: Callable[[], None] | None = None
    if telemetry.provider is not None:
        from app.telemetry.tracing import instrument_database, instrument_http_client

        instrument_http_client(http, telemetry.provider)
        untrace_database = instrument_database(alchemy, telemetry.provider)
    tool_directory = build_tool_directory(toolbox.registry)
    try:
        storage = create_storage(settings)
        url_policy = UrlPolicy.from_settings(settings)
        models_file = (
            load_models_file(Path(settings.models_file), registry, tool_directory)
            if settings.models_file
            else None
        )
    except ValueError as exc:  # misconfiguration: fail at start, not on the first upload
        raise SettingsError(str(exc)) from exc

    listener = (
        MetricsListener(settings.metrics_address, settings.prometheus_multiproc_dir)
        if settings.metrics and settings.metrics_address
        else None
    )

    startup_providers: list[str] | None = None

    async def on_startup(app: Litestar) -> None:
        nonlocal startup_providers
        if listener is not None:
            try:
                listener.start()
            except OSError as exc:
                raise SettingsError(
                    f"IRIS_METRICS_ADDRESS={settings.metrics_address}: {exc.strerror}"
                ) from exc
        app.state.decode_limiter = anyio.CapacityLimiter(DECODE_SLOTS)
        delivery = ImageDelivery(
            VariantCache(storage, app.state.decode_limiter),
            storage_publicly_reachable=settings.storage_publicly_reachable,
            url_ttl_seconds=settings.signed_url_ttl_seconds,
        )
        app.state.run_manager = RunManager(
            RunServices(
                alchemy=alchemy,
                storage=storage,
                delivery=delivery,
                interrupt_ttl_seconds=settings.interrupt_ttl_seconds,
                deadlines=Deadlines(
                    first_token=settings.first_token_timeout_seconds,
                    idle=settings.idle_timeout_seconds,
                    run=settings.run_timeout_seconds,
                ),
                telemetry=telemetry,
                cooldowns=Cooldowns(
                    alchemy,
                    telemetry,
                    failures=settings.cooldown_failures,
                    seconds=settings.cooldown_seconds,
                ),
                toolbox=toolbox,
                media=MediaStore(
                    storage=storage,
                    alchemy=alchemy,
                    limiter=app.state.decode_limiter,
                    limits=ResultLimits(
                        max_text_bytes=settings.tool_result_max_text_bytes,
                        max_media=settings.tool_result_max_media,
                        max_media_bytes=settings.tool_result_max_media_bytes,
                        max_image_pixels=settings.max_image_pixels,
                    ),
                ),
                url_ttl_seconds=settings.signed_url_ttl_seconds,
                page_rendering=PageRendering(
                    timeout_seconds=settings.pdf_timeout_seconds,
                    memory_bytes=settings.pdf_worker_memory_bytes,
                ),
            ),
            heartbeat_seconds=settings.run_heartbeat_seconds,
            stale_seconds=settings.run_stale_seconds,
            wakeups=log_wakeups(settings.effective_database_url, FOLLOW_POLL_SECONDS),
            follower_limits=FollowerLimits(
                frames=settings.sse_follower_max_frames, bytes=settings.sse_follower_max_bytes
            ),
        )
        # Start even when the database is down or behind: /readyz then says why (503), and every other
        # request answers 503 ``migrations_pending`` until the schema is at head, instead of the process
        # crash-looping or failing on missing tables. The catalogue is seeded once it is at head.
        serving = False

        async def schema_ready() -> None:
            await seed_catalogue(alchemy)
            if models_file is not None:
                try:
                    await apply_models_file(alchemy, models_file, tool_directory)
                except ModelsFileError as exc:
                    if not serving:
                        raise SettingsError(f"IRIS_MODELS_FILE: {exc}") from exc
                    log.error("IRIS_MODELS_FILE not applied: %s", exc, extra={"code": "models_file_invalid"})
            if not serving:
                # The enabled models' providers (and IRIS_PRELOAD_PROVIDERS) are imported and built now,
                # on a thread of their own; uvicorn serves once they are (on_startup_done). The others
                # load off the loop when first needed (ProviderRegistry.ready), or never.
                nonlocal startup_providers
                preload = settings.preload_list
                async with session_scope(alchemy) as db:
                    enabled = await ModelRepository(session=db).enabled_providers()
                startup_providers = sorted({*enabled, *preload}) if preload is not None else registry.ids
                registry.start_loading(startup_providers)
            await app.state.run_manager.start_keeping()
            search_indexer.start()

        app.state.schema_gate = gate = SchemaGate(alchemy.get_engine(), schema_ready)
        try:
            at_head = await gate.check()
        except (SQLAlchemyError, OSError) as exc:
            log.warning("database_unreachable at start-up: %s; /readyz reports 503 until it is", cause(exc))
            at_head = True  # not known to be behind: requests find out (503 database_unavailable)
        finally:
            serving = True
        if startup_providers is None:  # the catalogue could not be read: every provider (as before)
            startup_providers = registry.ids
            registry.start_loading(startup_providers)
        if not at_head:
            log.warning(
                "migrations_pending: run `alembic upgrade head` (`just migrate`); every request but "
                "/healthz and /readyz answers 503 until then, and this process serves once it is at head",
                extra={"code": "migrations_pending"},
            )

    async def on_startup_done(app: Litestar) -> None:
        """Wait for the start-up providers, then watch the loop: from here on it serves requests."""
        started = time.monotonic()
        await registry.ready(startup_providers or [])
        log.info(
            "loaded provider(s) %s (waited %.1f s for them); the others load on first need",
            ", ".join(startup_providers or []) or "none",
            time.monotonic() - started,
        )
        app.state.loop_monitor.start()

    async def on_shutdown(app: Litestar) -> None:
        if hasattr(app.state, "run_manager"):
            await app.state.run_manager.shutdown()
        await search_indexer.stop()
        await toolbox.pool.close()
        await storage.aclose()
        await http.aclose()
        await app.state.loop_monitor.stop()
        if listener is not None:
            listener.stop()
        if untrace_database is not None:
            untrace_database()
        await anyio.to_thread.run_sync(telemetry.shutdown)  # the spans still buffered are exported
        process_exited(settings.prometheus_multiproc_dir)

    return Litestar(
        route_handlers=[
            *route_handlers(settings),
            *static_routers(),
            *([DebugController] if settings.debug else []),
            *([MetricsController] if settings.metrics and not settings.metrics_address else []),
        ],
        cors_config=cors_config(settings),
        plugins=[SQLAlchemyPlugin(config=alchemy)],
        middleware=http_middleware(telemetry),
        dependencies=DEPENDENCIES,
        exception_handlers=EXCEPTION_HANDLERS_BY_SURFACE,
        before_request=before_request(telemetry),
        before_send=[truthful_allow],
        on_startup=[on_startup, on_startup_done],
        on_shutdown=[on_shutdown],
        state=State(
            {
                "settings": settings,
                "alchemy": alchemy,
                "search_indexer": search_indexer,
                "storage": storage,
                "url_policy": url_policy,
                "registry": registry,
                "tool_directory": tool_directory,
                "toolbox": toolbox,
                "loop_monitor": LoopMonitor(stacks=settings.debug),
                "telemetry": telemetry,
            }
        ),
        openapi_config=IrisOpenAPIConfig(
            title="Iris",
            version=version("iris"),
            description="Multimodal agent-chat backend: text and images in, AG-UI 1.0 events out.",
            path="/schema",
            use_handler_docstrings=True,
            render_plugins=[swagger_plugin()],
            components=Components(
                security_schemes={
                    "BearerToken": SecurityScheme(type="http", scheme="bearer", bearer_format="JWT")
                }
            ),
        ),
        request_max_body_size=settings.max_request_bytes,
        logging_config=litestar_logging(settings),
        debug=settings.debug,
    )


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
