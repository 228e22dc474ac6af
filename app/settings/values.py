"""The checks of single setting values (origins, addresses) and the error every unusable value raises."""

from __future__ import annotations

from urllib.parse import urlsplit


class SettingsError(ValueError):
    """An ``IRIS_*`` variable has a value Iris cannot use."""


_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_origins(value: str | None) -> list[str]:
    """The origins in a comma-separated ``IRIS_CORS_ORIGINS`` value, each checked and normalised the
    way a browser writes its ``Origin`` header; ``["*"]`` for any. A malformed one is a
    :class:`SettingsError` naming it."""
    if value is None or not value.strip():
        return []
    items = [item.strip() for item in value.split(",") if item.strip()]
    if "*" in items:
        if len(items) > 1:
            raise SettingsError(f"IRIS_CORS_ORIGINS: '*' allows every origin; list no others ({value!r})")
        return ["*"]
    return [_origin(item) for item in items]


def _origin(item: str) -> str:
    bad = SettingsError(
        f"IRIS_CORS_ORIGINS: {item!r} is not an origin; write scheme://host[:port] (http or https, "
        "no path, query or credentials), e.g. https://app.example.com"
    )
    try:
        parts = urlsplit(item)
        port = parts.port
    except ValueError:
        raise bad from None
    if (
        parts.scheme.lower() not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.path
        or parts.query
        or parts.fragment
        or "@" in parts.netloc
        or "*" in item
    ):
        raise bad
    scheme, host = parts.scheme.lower(), parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"  # an IPv6 literal keeps its brackets in an Origin header
    return f"{scheme}://{host}" + ("" if port in (None, _DEFAULT_PORTS[scheme]) else f":{port}")


def parse_address(value: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``) as a pair; a :class:`SettingsError` naming the value otherwise."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(f"IRIS_METRICS_ADDRESS={value!r} is not host:port (e.g. 127.0.0.1:9464)")
    return host, int(port)
