"""Loopback servers for the vendor and Supabase fakes: the helper ships with the SPI (plugins use it too)."""

from providers.testing.loopback import ASGIApp, serve_asgi

__all__ = ["ASGIApp", "serve_asgi"]
