"""Settings: one explicit object, read from ``IRIS_*`` variables only when asked.

Nothing here runs at import time. ``load_settings(os.environ)`` builds a :class:`Settings`;
``create_app`` and the CLI call :func:`prepare` to fill in what the embedded default derives
(the SQLite URL under the data directory and the generated JWT secret).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from iris.app.settings.otel import OtelSettings, load_otel_settings
from iris.app.settings.values import SettingsError, parse_address, parse_origins

__all__ = ["LogFormat", "Settings", "SettingsError", "StorageKind", "load_settings", "prepare"]

StorageKind = Literal["local", "supabase", "s3"]
LogFormat = Literal["text", "json"]

_WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "", "[::]"})  # noqa: S104 (recognised, not bound)
_SECRET_FILE = "jwt-secret"  # noqa: S105 (a file name, not a secret)


class Settings(msgspec.Struct, kw_only=True, frozen=True):
    """Everything Iris can be configured with; every field has a working default."""

    data_dir: str = ".iris"
    """Where the embedded database, local storage and the generated secret live (IRIS_DATA_DIR)."""
    host: str = "127.0.0.1"
    """Interface `iris serve` binds (IRIS_HOST)."""
    port: int = 8000
    """Port `iris serve` binds (IRIS_PORT)."""
    public_url: str | None = None
    """Base URL clients reach Iris at; the signed URLs Iris serves itself start with it. Default
    ``http://{host}:{port}`` (127.0.0.1 for a wildcard host) (IRIS_PUBLIC_URL)."""
    database_url: str | None = None
    """SQLAlchemy async URL; default SQLite file under the data directory (IRIS_DATABASE_URL)."""
    jwt_secret: str | None = None
    """HS256 secret for bearer tokens; generated into the data directory when unset (IRIS_JWT_SECRET)."""
    jwt_audience: str = "authenticated"
    """Required `aud` claim, Supabase's default (IRIS_JWT_AUDIENCE)."""
    auth_issuer: str | None = None
    """An OpenID Connect identity provider's issuer, exactly as its tokens' `iss` says it: Iris reads
    ``{issuer}/.well-known/openid-configuration`` for the key set and requires this `iss`
    (IRIS_AUTH_ISSUER)."""
    auth_jwks_url: str | None = None
    """The identity provider's key set (JWKS) when it publishes no discovery document; default: the
    discovery document's, or ``{IRIS_SUPABASE_URL}/auth/v1/.well-known/jwks.json`` (IRIS_AUTH_JWKS_URL)."""
    auth_audience: str | None = None
    """Required `aud` claim of the identity provider's tokens; default IRIS_JWT_AUDIENCE
    (IRIS_AUTH_AUDIENCE)."""
    auth_admin_claim: str | None = None
    """Which identity-provider tokens are admins: ``role=admin``, ``groups contains iris-admins``,
    ``app_metadata.role=admin``; default: a `role` of ``admin`` or ``service_role``
    (IRIS_AUTH_ADMIN_CLAIM)."""
    auth_jwks_cache_seconds: Annotated[float, msgspec.Meta(gt=0)] = 300.0
    """How long the key set is trusted when its response has no ``Cache-Control: max-age``
    (IRIS_AUTH_JWKS_CACHE_SECONDS)."""
    auth_jwks_refetch_seconds: Annotated[float, msgspec.Meta(gt=0)] = 5.0
    """The least time between two fetches of the key set (a token with an unknown `kid`, a failed
    fetch, or ``max-age`` shorter than this) (IRIS_AUTH_JWKS_REFETCH_SECONDS)."""
    budget_user_day_usd: Annotated[float, msgspec.Meta(ge=0)] = 0.0
    """What a user's stored runs may cost per UTC day, in USD, before the next run is refused (429
    ``budget_exceeded``); 0: no budget. A run that crosses it finishes (IRIS_BUDGET_USER_DAY_USD)."""
    budget_user_month_usd: Annotated[float, msgspec.Meta(ge=0)] = 0.0
    """The same per UTC calendar month (IRIS_BUDGET_USER_MONTH_USD)."""
    budget_hold_output_tokens: Annotated[int, msgspec.Meta(ge=0)] = 4096
    """The output tokens a request's budget hold assumes when the request sets no maximum
    (ADR 0085; IRIS_BUDGET_HOLD_OUTPUT_TOKENS)."""
    audit_retention_days: Annotated[int, msgspec.Meta(ge=0)] = 365
    """How long audit log rows are kept; 0 keeps them forever (IRIS_AUDIT_RETENTION_DAYS)."""
    audit_tool_arguments: bool = False
    """Keep a tool call's arguments in its audit row; off, they are redacted (IRIS_AUDIT_TOOL_ARGUMENTS)."""
    guest_token_ttl_seconds: int = 3600
    """Lifetime of tokens from POST /api/auth/guest (IRIS_GUEST_TOKEN_TTL_SECONDS)."""
    storage: StorageKind = "local"
    """Object store backend: `local`, `supabase` or `s3` (IRIS_STORAGE)."""
    storage_bucket: str = "iris"
    """Bucket every upload goes to (IRIS_STORAGE_BUCKET)."""
    supabase_url: str | None = None
    """Supabase project URL, for IRIS_STORAGE=supabase (IRIS_SUPABASE_URL)."""
    supabase_service_key: str | None = None
    """Supabase service-role key, for IRIS_STORAGE=supabase (IRIS_SUPABASE_SERVICE_KEY)."""
    supabase_jwt_secret: str | None = None
    """Supabase project JWT secret: lets Iris verify signed-URL tokens itself (IRIS_SUPABASE_JWT_SECRET)."""
    s3_region: str | None = None
    """The bucket's region for IRIS_STORAGE=s3; unset, the AWS chain's (``AWS_REGION``, the profile's);
    ``auto`` for Cloudflare R2 (IRIS_S3_REGION)."""
    s3_endpoint_url: str | None = None
    """An S3-compatible endpoint instead of AWS: ``https://{account}.r2.cloudflarestorage.com``,
    ``http://minio:9000``, ``https://storage.googleapis.com`` (IRIS_S3_ENDPOINT_URL)."""
    s3_addressing_style: Literal["auto", "virtual", "path"] = "auto"
    """``path`` (``{endpoint}/{bucket}/{key}``) for MinIO and most self-hosted stores, ``virtual``
    (``{bucket}.{endpoint}``), or botocore's choice (IRIS_S3_ADDRESSING_STYLE)."""
    s3_timeout_seconds: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    """The longest one S3 request may wait for an answer or a chunk before it is a 503
    ``storage_unavailable`` (IRIS_S3_TIMEOUT_SECONDS)."""
    signed_url_ttl_seconds: int = 3600
    """Lifetime of every signed URL Iris hands out: images, documents, audio (IRIS_SIGNED_URL_TTL_SECONDS)."""
    max_image_bytes: int = 5 * 1024 * 1024
    """Largest accepted image upload, in bytes (IRIS_MAX_IMAGE_BYTES)."""
    max_image_pixels: int = 50_000_000
    """Decompression-bomb guard: images with more pixels are refused (IRIS_MAX_IMAGE_PIXELS)."""
    max_images_per_message: int = 4
    """Most images one user message may carry (IRIS_MAX_IMAGES_PER_MESSAGE)."""
    max_documents_per_message: int = 5
    """Most documents (PDFs) one user message may carry (IRIS_MAX_DOCUMENTS_PER_MESSAGE)."""
    max_audio_per_message: int = 1
    """Most audio clips one user message may carry (IRIS_MAX_AUDIO_PER_MESSAGE)."""
    providers: str | None = None
    """Comma-separated allow-list of provider ids; unset loads every installed one (IRIS_PROVIDERS)."""
    preload_providers: str | None = None
    """Comma-separated provider ids imported at start-up besides those of the enabled models, or ``all``
    (IRIS_PRELOAD_PROVIDERS): the others load off the loop when first needed, and one not imported
    costs no memory (LiteLLM's import is ~270 MiB)."""
    storage_publicly_reachable: bool = False
    """Vendors can fetch our signed URLs; lets URL-fetching vendors get URLs instead of inline bytes
    (IRIS_STORAGE_PUBLICLY_REACHABLE)."""
    vendor_http2: bool = False
    """Offer HTTP/2 to vendors (httpx's transport) instead of aiohttp's HTTP/1.1, which costs a run less
    CPU; for a vendor or gateway that needs HTTP/2 (IRIS_VENDOR_HTTP2; ``iris.app.vendor_http``)."""
    max_request_bytes: int = 1024 * 1024
    """Largest JSON request body; uploads have their own limit (IRIS_MAX_REQUEST_BYTES)."""
    max_run_request_bytes: int = 48 * 1024 * 1024
    """Largest ``/agent/runs`` body, where documents and audio may come inline as base64: room for one
    PDF at the default 32 MiB limit (IRIS_MAX_RUN_REQUEST_BYTES)."""
    max_document_bytes: int = 32 * 1024 * 1024
    """Largest accepted PDF upload, in bytes (IRIS_MAX_DOCUMENT_BYTES)."""
    max_document_pages: int = 100
    """Most pages an accepted PDF may have (IRIS_MAX_DOCUMENT_PAGES)."""
    max_audio_bytes: int = 25 * 1024 * 1024
    """Largest accepted audio upload (WAV or MP3), in bytes (IRIS_MAX_AUDIO_BYTES)."""
    max_audio_seconds: float = 600.0
    """Longest accepted audio upload, in seconds (IRIS_MAX_AUDIO_SECONDS)."""
    pdf_timeout_seconds: float = 20.0
    """How long the PDF worker process may take over one file before it is killed and the file refused
    (IRIS_PDF_TIMEOUT_SECONDS)."""
    pdf_worker_memory_bytes: int = 1024 * 1024 * 1024
    """Address-space cap of the PDF worker process; a PDF that needs more is refused
    (IRIS_PDF_WORKER_MEMORY_BYTES)."""
    sse_ping_seconds: float = 15.0
    """Seconds of silence on an event stream before a ``: ping`` comment (IRIS_SSE_PING_SECONDS)."""
    sse_follower_max_bytes: Annotated[int, msgspec.Meta(ge=1)] = 1024 * 1024
    """How many event bytes a run's stream may fall behind the run while its client is still taking the
    last write; past it (or past IRIS_SSE_FOLLOWER_MAX_FRAMES events) the stream ends with a ``CUSTOM``
    ``iris/streamDropped`` event, and the client re-attaches with ``Last-Event-ID``
    (IRIS_SSE_FOLLOWER_MAX_BYTES)."""
    sse_follower_max_frames: Annotated[int, msgspec.Meta(ge=1)] = 8192
    """The same bound in events (IRIS_SSE_FOLLOWER_MAX_FRAMES)."""
    max_tool_iterations: int = 5
    """Model turns one run may take while calling server tools; calls made in the last one are answered
    as not run, and the run ends (IRIS_MAX_TOOL_ITERATIONS)."""
    interrupt_ttl_seconds: int = 3600
    """How long an approval interrupt can be answered (IRIS_INTERRUPT_TTL_SECONDS)."""
    mcp_tools_ttl_seconds: float = 300.0
    """How long an MCP server's tool list is trusted before it is fetched again, unless the server says
    (``ttlMs``, 2026-07-28); the server's ``tools/list_changed`` refreshes it at once
    (IRIS_MCP_TOOLS_TTL_SECONDS)."""
    mcp_token_key: str | None = None
    """The key users' tokens at OAuth-protected MCP servers are encrypted with in the database: a Fernet
    key, or any passphrase of 32 characters or more (stretched with HKDF). Unset: derived from the JWT
    secret, so rotating that secret makes every user sign in to those servers again (ADR 0086)
    (IRIS_MCP_TOKEN_KEY)."""
    tool_result_max_text_bytes: int = 100_000
    """Largest text (all text parts, UTF-8) one tool result may give the model; a larger result is a
    tool error the model reads (IRIS_TOOL_RESULT_MAX_TEXT_BYTES)."""
    tool_result_max_media: int = 4
    """Most images and audio clips one tool result may carry (IRIS_TOOL_RESULT_MAX_MEDIA)."""
    tool_result_max_media_bytes: int = 5 * 1024 * 1024
    """Largest image, audio clip or embedded file in a tool result, in bytes
    (IRIS_TOOL_RESULT_MAX_MEDIA_BYTES)."""
    run_heartbeat_seconds: float = 5.0
    """How often a process marks its running runs alive and looks for cancel requests
    (IRIS_RUN_HEARTBEAT_SECONDS)."""
    search_index_seconds: float = 1.0
    """SQLite: how often a process moves the messages written since into the full-text index (a search
    always does so first, so it never misses one; IRIS_SEARCH_INDEX_SECONDS)."""
    run_stale_seconds: float = 60.0
    """A running run whose heartbeat is older than this was lost with its process: it is marked failed
    (IRIS_RUN_STALE_SECONDS)."""
    cors_origins: str | None = None
    """Comma-separated origins (``scheme://host[:port]``) whose pages may call the API, or ``*`` for
    any; unset means same-origin only. Tokens travel in ``Authorization``, never in cookies, so no
    credentials mode is needed and ``*`` is safe to offer (IRIS_CORS_ORIGINS)."""
    models_file: str | None = None
    """A TOML file of models, agents and MCP servers applied at every start; see examples/models.toml
    (IRIS_MODELS_FILE)."""
    sqlite_lock_timeout_seconds: float = 5.0
    """SQLite only: the longest a request or run waits for its turn to write (behind this process's
    other writers, or another process holding the database) before it answers 503
    ``database_unavailable`` (IRIS_SQLITE_LOCK_TIMEOUT_SECONDS)."""
    first_token_timeout_seconds: float = 60.0
    """A model turn whose vendor has sent no content (text, tool call, usage, finish) this long after the
    request ends the run with ``RUN_ERROR`` ``provider_timeout``; a model's ``options`` may set
    ``firstTokenTimeoutSeconds`` (IRIS_FIRST_TOKEN_TIMEOUT_SECONDS)."""
    idle_timeout_seconds: float = 60.0
    """Once content flows, this long without more (keep-alives and SSE comments do not count) ends the run
    with ``provider_idle_timeout``; per model: ``idleTimeoutSeconds`` (IRIS_IDLE_TIMEOUT_SECONDS)."""
    run_timeout_seconds: float = 600.0
    """A run still going this long after it started (all model turns and tools) ends with ``run_timeout``;
    per model: ``runTimeoutSeconds`` (IRIS_RUN_TIMEOUT_SECONDS)."""
    retry_attempts: Annotated[int, msgspec.Meta(ge=1, le=10)] = 1
    """Requests a model turn makes to one model on a retryable vendor failure (429, 5xx, a dropped
    connection, no first token in time) while nothing has streamed, the first one included: 1 (the
    default) never retries; a model's ``retryAttempts`` overrides it (IRIS_RETRY_ATTEMPTS)."""
    retry_backoff_seconds: Annotated[float, msgspec.Meta(ge=0, le=60)] = 0.5
    """The first wait before a retry, doubled for each next one and jittered (±50 %); a vendor's
    ``Retry-After`` wins when longer. Retries never wait past the turn's first-token deadline; per
    model: ``retryBackoffSeconds`` (IRIS_RETRY_BACKOFF_SECONDS)."""
    cooldown_failures: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 3
    """Retryable failures of one model within IRIS_COOLDOWN_SECONDS (over all processes) after which it
    is cooled down: runs with fallbacks skip it until the cool-down ends (IRIS_COOLDOWN_FAILURES)."""
    cooldown_seconds: Annotated[float, msgspec.Meta(ge=0, le=86_400)] = 60.0
    """How long failures count towards a cool-down, and how long a cool-down lasts; 0 turns cool-downs
    off (IRIS_COOLDOWN_SECONDS)."""
    quota_user_runs_per_minute: int = 600
    """Runs a user may start per minute, over all processes; 0: no limit (IRIS_QUOTA_USER_RUNS_PER_MINUTE)."""
    quota_user_tokens_per_minute: Annotated[int, msgspec.Meta(ge=0)] = 0
    """Model tokens (input and output) a user's runs started this minute may use before the next run is
    refused (429 ``rate_limited``), over all processes; 0: no limit (IRIS_QUOTA_USER_TOKENS_PER_MINUTE)."""
    quota_user_concurrent_runs: int = 200
    """Runs a user may have going at once (IRIS_QUOTA_USER_CONCURRENT_RUNS)."""
    quota_user_uploads_per_minute: int = 300
    """Uploads a user may send per minute (IRIS_QUOTA_USER_UPLOADS_PER_MINUTE)."""
    quota_user_upload_bytes_per_day: int = 10 * 1024**3
    """Upload bytes a user may send per UTC day (IRIS_QUOTA_USER_UPLOAD_BYTES_PER_DAY)."""
    quota_guest_runs_per_minute: int = 5
    """Runs a guest may start per minute (IRIS_QUOTA_GUEST_RUNS_PER_MINUTE)."""
    quota_guest_concurrent_runs: int = 1
    """Runs a guest may have going at once (IRIS_QUOTA_GUEST_CONCURRENT_RUNS)."""
    quota_guest_uploads_per_minute: int = 5
    """Uploads a guest may send per minute (IRIS_QUOTA_GUEST_UPLOADS_PER_MINUTE)."""
    quota_guest_upload_bytes_per_day: int = 25 * 1024**2
    """Upload bytes a guest may send per UTC day (IRIS_QUOTA_GUEST_UPLOAD_BYTES_PER_DAY)."""
    quota_guest_tokens_per_hour: int = 20
    """Guest tokens one client address may get per hour (IRIS_QUOTA_GUEST_TOKENS_PER_HOUR)."""
    debug: bool = False
    """Litestar debug mode: tracebacks in logs, never in responses (IRIS_DEBUG)."""
    log_format: LogFormat = "text"
    """``text`` (readable lines) or ``json`` (one object per line, with the run's ids and the error
    code) for what `iris serve` logs (IRIS_LOG_FORMAT)."""
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    """The least severe log lines `iris serve` writes (IRIS_LOG_LEVEL)."""
    metrics: bool = True
    """Prometheus metrics at ``GET /metrics`` (IRIS_METRICS)."""
    metrics_address: str | None = None
    """``host:port`` of a listener that serves only ``/metrics``, without a token; the main port then
    serves none (IRIS_METRICS_ADDRESS)."""
    trace_content: bool = False
    """Record prompts, answers and tool arguments/results in trace spans (the GenAI conventions'
    opt-in content attributes); off, spans carry ids, models, sizes and codes only
    (IRIS_TRACE_CONTENT)."""
    otel: OtelSettings = OtelSettings()
    """The standard ``OTEL_*`` variables (not ``IRIS_*``): traces are off unless they configure them."""
    prometheus_multiproc_dir: str | None = None
    """``PROMETHEUS_MULTIPROC_DIR``, prometheus_client's own switch: set, every worker process writes
    its metric values to files there and any of them answers a scrape for all."""

    def __post_init__(self) -> None:
        parse_origins(self.cors_origins)  # a malformed origin fails at start-up, naming the value
        if self.metrics_address is not None:
            parse_address(self.metrics_address)

    @property
    def provider_allow_list(self) -> frozenset[str] | None:
        """``providers`` as a set, or ``None`` for all."""
        if self.providers is None:
            return None
        return frozenset(p.strip() for p in self.providers.split(",") if p.strip())

    @property
    def preload_list(self) -> frozenset[str] | None:
        """``preload_providers`` as a set; ``None`` for ``all``."""
        names = frozenset(p.strip() for p in (self.preload_providers or "").split(",") if p.strip())
        return None if "all" in names else names

    @property
    def cors_origin_list(self) -> list[str]:
        """``cors_origins`` as browsers spell an ``Origin`` header (default ports dropped)."""
        return parse_origins(self.cors_origins)

    @property
    def effective_public_url(self) -> str:
        """``public_url``, or ``http://{host}:{port}``: a changed port moves every image URL with it. A
        wildcard host is no address a client can use; 127.0.0.1 stands in (see :attr:`public_url_warning`)."""
        if self.public_url:
            return self.public_url
        host = "127.0.0.1" if self.host in _WILDCARD_HOSTS else self.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    @property
    def public_url_warning(self) -> str | None:
        """What to say at start when the default public URL is a guess (the host listens everywhere)."""
        if self.public_url or self.host not in _WILDCARD_HOSTS:
            return None
        return (
            f"IRIS_HOST={self.host} listens on every interface, but no IRIS_PUBLIC_URL is set: image URLs "
            f"will say {self.effective_public_url}, which only this machine can reach. Set IRIS_PUBLIC_URL "
            "to the address clients use."
        )

    @property
    def data_path(self) -> Path:
        """``data_dir`` as a path."""
        return Path(self.data_dir)

    @property
    def effective_database_url(self) -> str:
        """The configured URL, or the embedded SQLite file under the data directory."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_path / 'iris.db').resolve()}"


_NOT_IRIS = frozenset({"otel", "prometheus_multiproc_dir"})
"""Settings read from the standard variables of other tools rather than ``IRIS_*``."""
_ENV_FIELDS: dict[str, str] = {
    f"IRIS_{name.upper()}": name for name in Settings.__struct_fields__ if name not in _NOT_IRIS
}


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Build settings from ``IRIS_*`` entries of ``environ``; unknown ``IRIS_*`` names are errors."""
    raw: dict[str, str] = {}
    for key, value in environ.items():
        if not key.startswith("IRIS_") or key.startswith("IRIS_TEST_"):
            continue
        if key not in _ENV_FIELDS:
            raise SettingsError(f"unknown setting {key}; known: {', '.join(sorted(_ENV_FIELDS))}")
        raw[_ENV_FIELDS[key]] = value
    try:
        settings = msgspec.convert(raw, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"invalid setting: {exc}") from exc
    multiproc = environ.get("PROMETHEUS_MULTIPROC_DIR") or None
    return msgspec.structs.replace(
        settings, otel=load_otel_settings(environ), prometheus_multiproc_dir=multiproc
    )


def prepare(settings: Settings) -> Settings:
    """Create the data directory and fill in the JWT secret (generated once, then reused)."""
    settings.data_path.mkdir(parents=True, exist_ok=True)
    if settings.jwt_secret:
        return settings
    return msgspec.structs.replace(settings, jwt_secret=_load_or_create_secret(settings.data_path))


def _load_or_create_secret(data_dir: Path) -> str:
    path = data_dir / _SECRET_FILE
    try:
        existing = path.read_text().strip()
    except FileNotFoundError:
        existing = ""
    if existing:
        return existing
    secret = secrets.token_urlsafe(48)
    # O_EXCL: when two processes start at once, one writes and both read the winner's secret.
    try:
        with path.open("x") as handle:
            handle.write(secret)
        path.chmod(0o600)
    except FileExistsError:
        return path.read_text().strip()
    return secret
