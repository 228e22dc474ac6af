"""The official ``openai`` SDK's client, pointed at the gateway under test (``tests/gateway/conftest.py``)
as one user: no retries, so a test sees each answer the server gave."""

from __future__ import annotations

import uuid

import openai

from tests.gateway.conftest import Gateway, token
from tests.support.waits import REQUEST_SECONDS


def client(gateway: Gateway, user: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=gateway.v1,
        api_key=token(user or f"u-{uuid.uuid4().hex[:8]}"),
        timeout=REQUEST_SECONDS,
        max_retries=0,
    )
