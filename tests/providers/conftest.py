"""Fixtures the vendor provider tests share (helpers and test data are in :mod:`tests.providers.helpers`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from iris.app.vendor_http import vendor_http_client


@pytest.fixture(params=["aiohttp", "httpx-h2"])
async def http(request: pytest.FixtureRequest) -> AsyncIterator[httpx.AsyncClient]:
    """The client a provider under test sends with: the app's vendor client, on each of its two
    transports (aiohttp's HTTP/1.1, the default; httpx's own, ``IRIS_VENDOR_HTTP2``), fresh per test."""
    async with vendor_http_client(http2=request.param == "httpx-h2") as client:
        client.timeout = httpx.Timeout(10)  # a test that hangs fails instead
        yield client
