"""Loopback servers for the vendor and Supabase fakes and for Iris on a real socket. The helper ships with
the SPI (plugins use it too); here its start-up wait is the one sized for a loaded machine."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from iris.providers.testing.loopback import ASGIApp
from iris.providers.testing.loopback import serve_asgi as _serve_asgi
from tests.support.waits import SERVER_SECONDS

__all__ = ["ASGIApp", "serve_asgi"]


@contextmanager
def serve_asgi(app: ASGIApp, *, lifespan: Literal["on", "off"] = "off") -> Iterator[str]:
    """:func:`iris.providers.testing.loopback.serve_asgi`, waiting up to ``SERVER_SECONDS`` for start-up
    (Iris's
    lifespan opens its database) instead of its own 10 s."""
    with _serve_asgi(app, lifespan=lifespan, startup_timeout=SERVER_SECONDS) as base:
        yield base
