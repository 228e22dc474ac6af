"""The official ``anthropic`` SDK's client, pointed at the gateway under test (``tests/gateway/conftest.py``)
as one user, the Iris token as its API key (sent as ``x-api-key``): no retries, so a test sees each answer
the server gave."""

from __future__ import annotations

import uuid

import anthropic

from tests.gateway.conftest import Gateway, token
from tests.support.waits import REQUEST_SECONDS


def anthropic_client(gateway: Gateway, user: str | None = None) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=gateway.base,
        api_key=token(user or f"u-{uuid.uuid4().hex[:8]}"),
        timeout=REQUEST_SECONDS,
        max_retries=0,
    )
