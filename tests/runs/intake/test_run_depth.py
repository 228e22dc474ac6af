"""JSON nested past the documented depth limit in any free-form field is a 422 naming the field."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.api.json_depth import MAX_JSON_DEPTH
from tests.support.runs import run_input, user_message

Client = AsyncTestClient[Litestar]
pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)  # no database involved


DEEP = "__deep__"


def nested(depth: int) -> str:
    """JSON text of ``depth`` levels of alternating arrays and objects around a scalar (built as text:
    ``json.dumps`` itself gives up near 1,000 levels)."""
    opening = "".join('{"a":' if level % 2 else "[" for level in range(depth))
    closing = "".join("}" if level % 2 else "]" for level in reversed(range(depth)))
    return f"{opening}1{closing}"


def with_deep_value(body: dict[str, Any], depth: int) -> bytes:
    """``body`` as JSON with the string ``DEEP`` replaced by a value ``depth`` levels deep."""
    return json.dumps(body).replace(json.dumps(DEEP), nested(depth)).encode()


def request_for(field: str) -> tuple[str, dict[str, Any]]:
    """The endpoint and a body whose ``field`` holds ``DEEP``."""
    run = run_input(str(uuid.uuid4()), user_message("hi"))
    match field:
        case "state" | "forwardedProps":
            return "/agent/runs", {**run, field: DEEP}
        case "tools[0].parameters":
            return "/agent/runs", {**run, "tools": [{"name": "t", "description": "d", "parameters": DEEP}]}
        case "resume[0].payload":
            return "/agent/runs/resume", {**run, "resume": [{"interruptId": "x", "payload": DEEP}]}
        case "messages[0].content":
            return "/api/llm/chat", {"modelId": "local/text", "messages": [{"role": "user", "content": DEEP}]}
        case _:
            return "/api/agents/default/chat", {"content": "hi", "forwardedProps": DEEP}


FIELDS = [
    "state",
    "forwardedProps",
    "tools[0].parameters",
    "resume[0].payload",
    "messages[0].content",
    "chat",
]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("depth", [2000, MAX_JSON_DEPTH + 1])
async def test_too_deep_json_is_422_naming_the_field(
    client: Client, alice: dict[str, str], field: str, depth: int
) -> None:
    url, body = request_for(field)
    response = await client.post(
        url, content=with_deep_value(body, depth), headers={**alice, "content-type": "application/json"}
    )
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["code"] == "json_too_deep"
    assert str(MAX_JSON_DEPTH) in problem["detail"]
    assert problem["field"] == ("forwardedProps" if field == "chat" else field), problem


async def test_json_at_the_limit_is_accepted(client: Client, alice: dict[str, str]) -> None:
    # The state member is one level below the root: its value may nest one level less.
    body = run_input(str(uuid.uuid4()), user_message("hi"), state=DEEP)
    response = await client.post(
        "/agent/runs",
        content=with_deep_value(body, MAX_JSON_DEPTH - 1),
        headers={**alice, "content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
