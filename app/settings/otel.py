"""The standard OpenTelemetry variables (``OTEL_*``) Iris honours, read into :class:`OtelSettings`."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from iris.app.settings.values import SettingsError

SAMPLERS = frozenset(
    {
        "always_on",
        "always_off",
        "traceidratio",
        "parentbased_always_on",
        "parentbased_always_off",
        "parentbased_traceidratio",
    }
)
"""The values of ``OTEL_TRACES_SAMPLER`` Iris understands (the SDK's built-in samplers)."""


class OtelSettings(msgspec.Struct, kw_only=True, frozen=True):
    """The standard OpenTelemetry variables Iris honours (``OTEL_*``; the OpenTelemetry names, not
    ``IRIS_*``). Tracing is off unless an OTLP endpoint is set or ``OTEL_TRACES_EXPORTER`` names an
    exporter; ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` turn it off whatever else is
    set."""

    sdk_disabled: bool = False
    """OTEL_SDK_DISABLED."""
    traces_exporter: str | None = None
    """OTEL_TRACES_EXPORTER: ``otlp``, ``console`` (spans printed to stdout) or ``none``."""
    endpoint: str | None = None
    """OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL; traces go to ``{endpoint}/v1/traces``."""
    traces_endpoint: str | None = None
    """OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the full URL traces are posted to (wins over ``endpoint``)."""
    protocol: str = "http/protobuf"
    """OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL."""
    headers: str | None = None
    """OTEL_EXPORTER_OTLP_TRACES_HEADERS or OTEL_EXPORTER_OTLP_HEADERS: ``key=value,…`` sent with
    every export (an API key for a hosted backend)."""
    timeout_ms: int = 10_000
    """OTEL_EXPORTER_OTLP_TRACES_TIMEOUT or OTEL_EXPORTER_OTLP_TIMEOUT, in milliseconds."""
    compression: str | None = None
    """OTEL_EXPORTER_OTLP_TRACES_COMPRESSION or OTEL_EXPORTER_OTLP_COMPRESSION: ``gzip``, ``deflate``."""
    service_name: str = "iris"
    """OTEL_SERVICE_NAME."""
    resource_attributes: str | None = None
    """OTEL_RESOURCE_ATTRIBUTES: ``key=value,…`` added to every span's resource."""
    sampler: str = "parentbased_always_on"
    """OTEL_TRACES_SAMPLER."""
    sampler_arg: float | None = None
    """OTEL_TRACES_SAMPLER_ARG: the ratio of the ``*traceidratio`` samplers (default 1.0)."""

    def __post_init__(self) -> None:
        if self.sampler not in SAMPLERS:
            raise SettingsError(
                f"OTEL_TRACES_SAMPLER={self.sampler!r} is not one Iris supports: "
                + ", ".join(sorted(SAMPLERS))
            )
        if self.sampler_arg is not None and not 0.0 <= self.sampler_arg <= 1.0:
            raise SettingsError(f"OTEL_TRACES_SAMPLER_ARG={self.sampler_arg} is not a ratio between 0 and 1")
        if self.traces_exporter not in (None, "otlp", "console", "none"):
            raise SettingsError(
                f"OTEL_TRACES_EXPORTER={self.traces_exporter!r}: Iris exports with otlp or console (or none)"
            )
        if self.tracing and self.exporter == "otlp" and self.protocol != "http/protobuf":
            raise SettingsError(
                f"OTEL_EXPORTER_OTLP_PROTOCOL={self.protocol!r}: Iris exports traces over http/protobuf "
                "(a collector's port 4318); grpc needs an exporter Iris does not install"
            )

    @property
    def tracing(self) -> bool:
        """Whether traces are recorded and exported at all."""
        if self.sdk_disabled or self.traces_exporter == "none":
            return False
        return self.traces_exporter is not None or bool(self.endpoint or self.traces_endpoint)

    @property
    def exporter(self) -> str:
        return self.traces_exporter or "otlp"

    @property
    def traces_url(self) -> str:
        """Where OTLP/HTTP traces are posted (the spec's rule: a base endpoint gets ``/v1/traces``)."""
        if self.traces_endpoint:
            return self.traces_endpoint
        base = self.endpoint or "http://localhost:4318"
        return f"{base.rstrip('/')}/v1/traces"


_OTEL_VARIABLES: dict[str, tuple[str, ...]] = {
    "sdk_disabled": ("OTEL_SDK_DISABLED",),
    "traces_exporter": ("OTEL_TRACES_EXPORTER",),
    "endpoint": ("OTEL_EXPORTER_OTLP_ENDPOINT",),
    "traces_endpoint": ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",),
    "protocol": ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
    "headers": ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"),
    "timeout_ms": ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"),
    "compression": ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"),
    "service_name": ("OTEL_SERVICE_NAME",),
    "resource_attributes": ("OTEL_RESOURCE_ATTRIBUTES",),
    "sampler": ("OTEL_TRACES_SAMPLER",),
    "sampler_arg": ("OTEL_TRACES_SAMPLER_ARG",),
}
"""Each :class:`OtelSettings` field and the variables it is read from, the more specific first."""


def load_otel_settings(environ: Mapping[str, str]) -> OtelSettings:
    """The ``OTEL_*`` variables of ``environ`` Iris honours; an unusable value is a :class:`SettingsError`."""
    raw: dict[str, str] = {}
    for field, names in _OTEL_VARIABLES.items():
        value = next((environ[name].strip() for name in names if environ.get(name, "").strip()), None)
        if value is not None:
            raw[field] = value.lower() if field in ("sdk_disabled", "traces_exporter", "sampler") else value
    try:
        return msgspec.convert(raw, OtelSettings, strict=False)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"invalid OpenTelemetry setting: {exc}") from exc
