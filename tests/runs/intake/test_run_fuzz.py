"""Hypothesis throws run-shaped and arbitrary bodies at every endpoint that starts a run: the answer is a
problem+json with a code, or a stream the AG-UI oracle accepts — never a 500."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from litestar.testing import TestClient

from iris.app.asgi import create_app
from iris.app.security.auth import issue_token
from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.agui import check_stream

FUZZ = hypothesis_settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=16)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)
part = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "binary", "image_url", "audio", "weird"]) | json_values},
    optional={
        "text": json_values,
        "source": st.fixed_dictionaries(
            {"type": st.sampled_from(["url", "data", "file"]) | json_values},
            optional={"value": json_values, "mimeType": json_values},
        ),
        "mimeType": st.sampled_from(["image/png", "application/pdf"]) | json_values,
        "url": json_values,
        "id": json_values,
        "image": json_values,
    },
)
message = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=8) | json_values,
        "role": st.sampled_from(["user", "assistant", "tool", "system", "reasoning"]) | json_values,
        "content": st.text(max_size=20) | st.lists(part, max_size=3) | json_values,
    },
    optional={"toolCallId": json_values},
)
run_like = st.fixed_dictionaries(
    {
        "threadId": st.just(str(uuid.uuid4())) | json_values,
        "runId": st.text(min_size=1, max_size=8) | json_values,
    },
    optional={
        "messages": st.lists(message, max_size=3) | json_values,
        "tools": json_values,
        "resume": json_values,
        "forwardedProps": json_values,
        "protocolVersion": json_values,
    },
)
chat_like = st.fixed_dictionaries(
    {},
    optional={
        "parts": st.lists(part, max_size=3) | json_values,
        "content": json_values,
        "sessionId": json_values,
        "modelId": st.sampled_from(["local/vision", "local/text"]) | json_values,
        "editMessageId": json_values,
        "regenerate": json_values,
        "messages": json_values,
        "stream": st.booleans() | json_values,
    },
)


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_run_endpoints_answer_a_problem_or_a_valid_stream(settings: Settings) -> None:
    headers = {
        "Authorization": f"Bearer {issue_token(JWT_SECRET, 'fuzzer')}",
        "content-type": "application/json",
    }
    with TestClient(app=create_app(settings, environ={})) as client:

        @FUZZ
        @given(
            body=run_like | chat_like | json_values,
            raw=st.binary(max_size=48),
            url=st.sampled_from(
                ["/agent/runs", "/agent/runs/resume", "/api/agents/default/chat", "/api/llm/chat"]
            ),
        )
        def check(body: Any, raw: bytes, url: str) -> None:
            if url == "/api/llm/chat" and isinstance(body, dict):
                body = {"modelId": "local/vision", **body}
            for content in (json.dumps(body).encode(), raw):
                response = client.post(url, content=content, headers=headers)
                assert response.status_code < 500, response.text
                if response.status_code >= 400:
                    assert response.headers["content-type"] == "application/problem+json"
                    assert response.json()["code"]
                elif response.headers["content-type"].startswith("text/event-stream"):
                    check_stream(response.content)

        check()
