"""The application factory: everything is built here from an explicit :class:`Settings`."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import httpx
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig, SQLAlchemyPlugin
from litestar import Litestar
from litestar.datastructures import State
from litestar.openapi.spec import Components, SecurityScheme
from sqlalchemy.exc import SQLAlchemyError

from iris.app.api.allow import truthful_allow
from iris.app.api.anthropic.errors import with_messages_surface
from iris.app.api.deps import DEPENDENCIES
from iris.app.api.hooks import before_request, cors_config
from iris.app.api.loop_monitor import LoopMonitor
from iris.app.api.openai.errors import EXCEPTION_HANDLERS_BY_SURFACE
from iris.app.api.openapi import IrisOpenAPIConfig
from iris.app.api.routes import route_handlers
from iris.app.api.routes.debug import DebugController
from iris.app.api.routes.metrics import MetricsController
from iris.app.api.routes.web import static_routers, swagger_plugin
from iris.app.catalogue.agent_tools import KnownTools
from iris.app.catalogue.defaults import seed_catalogue
from iris.app.catalogue.models_file import ModelsFile, ModelsFileError, apply_models_file, load_models_file
from iris.app.mcp.oauth.grants import OAuthRuntime
from iris.app.mcp.pool import McpPool
from iris.app.media.pipeline import ImageDelivery
from iris.app.media.tool_media import MediaStore, ResultLimits
from iris.app.media.uploads import DECODE_SLOTS
from iris.app.media.variants import VariantCache
from iris.app.persistence.availability import cause
from iris.app.persistence.db import create_alchemy_config, session_scope
from iris.app.persistence.migrations import SchemaGate
from iris.app.persistence.repositories import ModelRepository
from iris.app.persistence.search_indexer import SearchIndexer
from iris.app.runs import (
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
from iris.app.security.api_keys import KeyResolver
from iris.app.security.audit import AuditTrail, audit_hook
from iris.app.security.identity import TokenVerifier
from iris.app.security.url_policy import UrlPolicy
from iris.app.settings import Settings, SettingsError, load_settings, prepare
from iris.app.storage.base import Storage
from iris.app.storage.factory import create_storage
from iris.app.telemetry import Telemetry, build_telemetry
from iris.app.telemetry.http import http_middleware
from iris.app.telemetry.listener import MetricsListener
from iris.app.telemetry.logs import litestar_logging
from iris.app.telemetry.metrics import process_exited
from iris.app.vendor_http import vendor_http_client
from iris.providers import ProviderContext
from iris.providers.registry import ProviderRegistry
from iris.tools import ToolPluginContext
from iris.tools.registry import ToolRegistry

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
            outside,
            tools_ttl_seconds=settings.mcp_tools_ttl_seconds,
            log_dir=settings.data_path / "mcp",
            ask_ttl_seconds=settings.interrupt_ttl_seconds,
        ),
    )


@dataclass
class AppParts:
    """What one app is built from, made once by :func:`create_app` before Litestar starts: the pieces the
    start-up, the shut-down and the app's state share."""

    settings: Settings
    telemetry: Telemetry
    http: httpx.AsyncClient
    registry: ProviderRegistry
    toolbox: Toolbox
    alchemy: SQLAlchemyAsyncConfig
    search_indexer: SearchIndexer
    tool_directory: KnownTools
    storage: Storage
    url_policy: UrlPolicy
    models_file: ModelsFile | None
    listener: MetricsListener | None
    untrace_database: Callable[[], None] | None
    token_verifier: TokenVerifier
    audit: AuditTrail


def build_parts(
    settings: Settings,
    environ: Mapping[str, str],
    registry: ProviderRegistry | None,
    tool_registry: ToolRegistry | None,
    span_exporter: SpanExporter | None,
) -> AppParts:
    """Every piece of the app from prepared settings; a misconfiguration (storage, URL policy, the models
    file) fails here, at start, not on the first request that needs it."""
    telemetry = build_telemetry(settings, span_exporter=span_exporter)
    http = vendor_http_client(http2=settings.vendor_http2)
    if registry is None:
        registry = build_registry(settings, environ, http)
    toolbox = build_toolbox(settings, environ, tool_registry)
    if warning := settings.public_url_warning:
        log.warning(warning)
    alchemy = create_alchemy_config(settings, write_wait=telemetry.write_wait)
    untrace_database: Callable[[], None] | None = None
    if telemetry.provider is not None:
        from iris.app.telemetry.tracing import instrument_database, instrument_http_client

        instrument_http_client(http, telemetry.provider)
        untrace_database = instrument_database(alchemy, telemetry.provider)
    tool_directory = build_tool_directory(toolbox.registry)
    try:
        toolbox.pool.oauth = OAuthRuntime.from_settings(settings, alchemy, toolbox.pool.environ)
        storage = create_storage(settings)
        url_policy = UrlPolicy.from_settings(settings)
        models_file = (
            load_models_file(Path(settings.models_file), registry, tool_directory)
            if settings.models_file
            else None
        )
    except ValueError as exc:  # misconfiguration: fail at start, not on the first upload
        raise SettingsError(str(exc)) from exc
    return AppParts(
        settings=settings,
        telemetry=telemetry,
        http=http,
        registry=registry,
        toolbox=toolbox,
        alchemy=alchemy,
        search_indexer=SearchIndexer(alchemy, every_seconds=settings.search_index_seconds),
        tool_directory=tool_directory,
        storage=storage,
        url_policy=url_policy,
        models_file=models_file,
        listener=(
            MetricsListener(settings.metrics_address, settings.prometheus_multiproc_dir)
            if settings.metrics and settings.metrics_address
            else None
        ),
        untrace_database=untrace_database,
        token_verifier=TokenVerifier(settings),
        audit=AuditTrail(alchemy, retention_days=settings.audit_retention_days),
    )


def build_run_manager(parts: AppParts, decode_limiter: anyio.CapacityLimiter) -> RunManager:
    """The run manager and the services every run shares, from the settings."""
    settings, alchemy, storage = parts.settings, parts.alchemy, parts.storage
    delivery = ImageDelivery(
        VariantCache(storage, decode_limiter),
        storage_publicly_reachable=settings.storage_publicly_reachable,
        url_ttl_seconds=settings.signed_url_ttl_seconds,
    )
    return RunManager(
        RunServices(
            alchemy=alchemy,
            storage=storage,
            delivery=delivery,
            interrupt_ttl_seconds=settings.interrupt_ttl_seconds,
            audit_tool_arguments=settings.audit_tool_arguments,
            deadlines=Deadlines(
                first_token=settings.first_token_timeout_seconds,
                idle=settings.idle_timeout_seconds,
                run=settings.run_timeout_seconds,
            ),
            telemetry=parts.telemetry,
            cooldowns=Cooldowns(
                alchemy,
                parts.telemetry,
                failures=settings.cooldown_failures,
                seconds=settings.cooldown_seconds,
            ),
            toolbox=parts.toolbox,
            media=MediaStore(
                storage=storage,
                alchemy=alchemy,
                limiter=decode_limiter,
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


class Lifecycle:
    """The app's start-up and shut-down hooks over its :class:`AppParts`.

    Start-up goes on when the database is down or behind: /readyz then says why (503), and every other
    request answers 503 ``migrations_pending`` until the schema is at head, instead of the process
    crash-looping or failing on missing tables. The catalogue is seeded once it is at head.
    """

    def __init__(self, parts: AppParts) -> None:
        self.parts = parts
        self.startup_providers: list[str] | None = None
        self.serving = False  # whether start-up is over: a later failure is logged, not raised

    async def on_startup(self, app: Litestar) -> None:
        """Listen for metrics, build the run manager, and check the schema (seeding it when at head)."""
        parts = self.parts
        self.start_metrics_listener()
        app.state.decode_limiter = anyio.CapacityLimiter(DECODE_SLOTS)
        app.state.run_manager = build_run_manager(parts, app.state.decode_limiter)
        self.serving = False

        async def schema_ready() -> None:
            await self.schema_ready(app)

        app.state.schema_gate = gate = SchemaGate(parts.alchemy.get_engine(), schema_ready)
        try:
            at_head = await gate.check()
        except (SQLAlchemyError, OSError) as exc:
            log.warning("database_unreachable at start-up: %s; /readyz reports 503 until it is", cause(exc))
            at_head = True  # not known to be behind: requests find out (503 database_unavailable)
        finally:
            self.serving = True
        if self.startup_providers is None:  # the catalogue could not be read: every provider (as before)
            self.startup_providers = parts.registry.ids
            parts.registry.start_loading(self.startup_providers)
        if not at_head:
            log.warning(
                "migrations_pending: run `alembic upgrade head` (`just migrate`); every request but "
                "/healthz and /readyz answers 503 until then, and this process serves once it is at head",
                extra={"code": "migrations_pending"},
            )

    def start_metrics_listener(self) -> None:
        """The metrics listener on ``IRIS_METRICS_ADDRESS``, when one is configured."""
        listener, settings = self.parts.listener, self.parts.settings
        if listener is None:
            return
        try:
            listener.start()
        except OSError as exc:
            raise SettingsError(f"IRIS_METRICS_ADDRESS={settings.metrics_address}: {exc.strerror}") from exc

    async def schema_ready(self, app: Litestar) -> None:
        """Once the schema is at head: seed the catalogue, apply the models file, load the providers
        (during start-up only), and start keeping runs and indexing search."""
        parts = self.parts
        await seed_catalogue(parts.alchemy)
        if parts.models_file is not None:
            try:
                await apply_models_file(parts.alchemy, parts.models_file, parts.tool_directory)
            except ModelsFileError as exc:
                if not self.serving:
                    raise SettingsError(f"IRIS_MODELS_FILE: {exc}") from exc
                log.error("IRIS_MODELS_FILE not applied: %s", exc, extra={"code": "models_file_invalid"})
        if not self.serving:
            await self.start_loading_providers()
        await app.state.run_manager.start_keeping()
        parts.search_indexer.start()

    async def start_loading_providers(self) -> None:
        """The enabled models' providers (and IRIS_PRELOAD_PROVIDERS) are imported and built now, on a
        thread of their own; uvicorn serves once they are (on_startup_done). The others load off the
        loop when first needed (ProviderRegistry.ready), or never."""
        parts = self.parts
        preload = parts.settings.preload_list
        async with session_scope(parts.alchemy) as db:
            enabled = await ModelRepository(session=db).enabled_providers()
        self.startup_providers = sorted({*enabled, *preload}) if preload is not None else parts.registry.ids
        parts.registry.start_loading(self.startup_providers)

    async def on_startup_done(self, app: Litestar) -> None:
        """Wait for the start-up providers, then watch the loop: from here on it serves requests."""
        started = time.monotonic()
        await self.parts.registry.ready(self.startup_providers or [])
        log.info(
            "loaded provider(s) %s (waited %.1f s for them); the others load on first need",
            ", ".join(self.startup_providers or []) or "none",
            time.monotonic() - started,
        )
        app.state.loop_monitor.start()

    async def on_shutdown(self, app: Litestar) -> None:
        """Stop everything start-up started, then flush the spans still buffered."""
        parts = self.parts
        if hasattr(app.state, "run_manager"):
            await app.state.run_manager.shutdown()
        await parts.search_indexer.stop()
        await parts.toolbox.pool.close()
        await parts.storage.aclose()
        await parts.http.aclose()
        await parts.token_verifier.aclose()
        await app.state.loop_monitor.stop()
        if parts.listener is not None:
            parts.listener.stop()
        if parts.untrace_database is not None:
            parts.untrace_database()
        await anyio.to_thread.run_sync(parts.telemetry.shutdown)  # the spans still buffered are exported
        process_exited(parts.settings.prometheus_multiproc_dir)


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
    environ = os.environ if environ is None else environ
    parts = build_parts(settings, environ, registry, tool_registry, span_exporter)
    lifecycle = Lifecycle(parts)
    return Litestar(
        route_handlers=[
            *route_handlers(settings),
            *static_routers(),
            *([DebugController] if settings.debug else []),
            *([MetricsController] if settings.metrics and not settings.metrics_address else []),
        ],
        cors_config=cors_config(settings),
        plugins=[SQLAlchemyPlugin(config=parts.alchemy)],
        middleware=http_middleware(parts.telemetry),
        dependencies=DEPENDENCIES,
        exception_handlers=with_messages_surface(EXCEPTION_HANDLERS_BY_SURFACE),
        before_request=before_request(parts.telemetry),
        before_send=[truthful_allow, audit_hook(parts.audit)],
        on_startup=[lifecycle.on_startup, lifecycle.on_startup_done],
        on_shutdown=[lifecycle.on_shutdown],
        state=app_state(parts),
        openapi_config=openapi_config(),
        request_max_body_size=settings.max_request_bytes,
        logging_config=litestar_logging(settings),
        debug=settings.debug,
    )


def app_state(parts: AppParts) -> State:
    """What handlers find on ``app.state`` from the start (start-up adds the run manager and gate)."""
    return State(
        {
            "settings": parts.settings,
            "alchemy": parts.alchemy,
            "search_indexer": parts.search_indexer,
            "storage": parts.storage,
            "url_policy": parts.url_policy,
            "registry": parts.registry,
            "tool_directory": parts.tool_directory,
            "toolbox": parts.toolbox,
            "loop_monitor": LoopMonitor(stacks=parts.settings.debug),
            "telemetry": parts.telemetry,
            "token_verifier": parts.token_verifier,
            "key_resolver": KeyResolver(parts.alchemy, parts.audit),
        }
    )


def openapi_config() -> IrisOpenAPIConfig:
    """The OpenAPI document at ``/schema``, with the bearer token as its security scheme."""
    return IrisOpenAPIConfig(
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
    )
