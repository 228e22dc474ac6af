"""Typed provider failures. The core maps them to problem+json (before a stream) or RUN_ERROR (during)."""

from __future__ import annotations

from typing import Literal

ProviderErrorKind = Literal[
    "auth", "rate_limit", "bad_request", "unavailable", "could_not_fetch_image", "other"
]


class ProviderError(Exception):
    """A vendor call failed. ``message`` is safe to log; it never contains a key."""

    def __init__(
        self,
        kind: ProviderErrorKind,
        message: str,
        *,
        provider: str,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{provider}: {message}")
        self.kind = kind
        self.message = message
        self.provider = provider
        self.status = status
        self.retry_after = retry_after


class UnsupportedPartError(Exception):
    """A part the provider (or this model) cannot take. Parts are never silently dropped."""

    def __init__(
        self, provider: str, part_type: str, media_type: str | None = None, reason: str = ""
    ) -> None:
        what = f"{part_type} ({media_type})" if media_type else part_type
        super().__init__(f"{provider} cannot take {what}{': ' + reason if reason else ''}")
        self.provider = provider
        self.part_type = part_type
        self.media_type = media_type


class NoSuchProvider(LookupError):
    """No provider with that id is installed (or it failed to load); lists the alternatives."""

    def __init__(self, provider_id: str, available: list[str]) -> None:
        super().__init__(f"no provider {provider_id!r}; installed: {', '.join(available) or 'none'}")
        self.provider_id = provider_id
        self.available = available
