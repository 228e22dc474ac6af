"""Fixtures the vendor provider tests share (helpers and test data are in :mod:`tests.providers.helpers`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """The client a provider under test sends with (fresh per test, closed after it)."""
    async with httpx.AsyncClient(timeout=10) as client:
        yield client
