"""The ``openai`` SDK's Responses API types as a strict oracle for ``/v1/responses``: a ``Response``
and every stream event validated by its own type (:func:`~tests.support.openai_types.conforming`:
no required key missing at any depth), and a raw stream read as OpenAI sends it."""

from __future__ import annotations

import json
from typing import Any, get_args

import httpx
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel

from tests.support.openai_types import NULLABLE_REQUIRED, conforming
from tests.support.waits import REQUEST_SECONDS

NULLABLE_REQUIRED.setdefault(
    Response,
    frozenset({"error", "incomplete_details", "instructions", "metadata", "temperature", "top_p", "usage"}),
)
EVENT_TYPES: dict[str, type[BaseModel]] = {
    get_args(kind.model_fields["type"].annotation)[0]: kind
    for kind in get_args(get_args(ResponseStreamEvent)[0])
}
"""Each stream event's class, by its ``type``."""


def conforming_response(data: Any) -> Response:
    return conforming(Response, data)


def conforming_events(text: str) -> list[Any]:
    """An SSE body's events: each ``event:`` line names its ``data:``'s ``type``, each data validated
    by its own class, ``sequence_number`` counting up from 0 with no gap."""
    events: list[Any] = []
    for frame in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        data = json.loads(lines["data"])
        assert lines["event"] == data["type"], frame
        events.append(conforming(EVENT_TYPES[data["type"]], data))
        assert data["sequence_number"] == len(events) - 1, frame
    return events


def raw_stream(v1: str, token: str, body: dict[str, Any]) -> httpx.Response:
    """``POST /v1/responses`` with ``stream`` as a plain HTTP client sends it (the body read whole)."""
    return httpx.post(
        f"{v1}/responses",
        json={**body, "stream": True},
        headers={"Authorization": f"Bearer {token}"},
        timeout=REQUEST_SECONDS,
    )
