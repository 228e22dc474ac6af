"""Malformed requests get RFC 9457 problem+json with a stable code, never a 500."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import AsyncTestClient, TestClient

from iris.app.asgi import create_app
from iris.app.security.auth import issue_token
from iris.app.settings import Settings
from tests.conftest import JWT_SECRET

Client = AsyncTestClient[Litestar]
FUZZ = hypothesis_settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
Auth = Callable[..., dict[str, str]]


def _assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == f"urn:iris:problem:{code}"
    assert body["title"]
    assert None not in body.values()
    return body


async def test_unknown_route(client: Client) -> None:
    body = _assert_problem(await client.get("/api/nothing-here"), 404, "route_not_found")
    assert body["instance"] == "/api/nothing-here"


async def test_wrong_method(client: Client) -> None:
    _assert_problem(await client.delete("/healthz"), 405, "method_not_allowed")


async def test_malformed_json(client: Client, auth: Auth) -> None:
    response = await client.post(
        "/api/models",
        content=b'{"name": "x",',
        headers={**auth("root", "admin"), "content-type": "application/json"},
    )
    _assert_problem(response, 400, "malformed_body")


async def test_json_of_the_wrong_shape(client: Client, auth: Auth) -> None:
    response = await client.post("/api/models", json=["not", "an", "object"], headers=auth("root", "admin"))
    _assert_problem(response, 422, "validation_failed")


async def test_path_parameter_of_the_wrong_type(client: Client, auth: Auth) -> None:
    response = await client.patch("/api/models/not-a-uuid", json={}, headers=auth("root", "admin"))
    assert response.status_code in {400, 404}
    assert response.headers["content-type"] == "application/problem+json"


async def test_oversized_body_is_413(client: Client, auth: Auth) -> None:
    big = {"name": "x" * (2 * 1024 * 1024)}
    response = await client.post("/api/models", json=big, headers=auth("root", "admin"))
    _assert_problem(response, 413, "request_too_large")


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_random_bodies_never_500(settings: Settings, tmp_path: Path) -> None:
    """Hypothesis throws arbitrary JSON (and bytes) at the write endpoints."""
    app = create_app(settings)
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
        max_leaves=12,
    )
    model_like = st.fixed_dictionaries(
        {},
        optional={
            "name": json_values,
            "provider": json_values,
            "modelId": json_values,
            "type": st.sampled_from(["text", "vision", "multimodal", "x"]) | json_values,
            "options": json_values,
            "maxImages": json_values,
        },
    )

    with TestClient(app=app) as client:

        @FUZZ
        @given(
            body=model_like | json_values,
            raw=st.binary(max_size=64),
            method=st.sampled_from(["POST", "PATCH"]),
        )
        def check(body: Any, raw: bytes, method: str) -> None:
            url = "/api/models" if method == "POST" else "/api/models/01a229d8-26d6-72aa-b0f3-5dc1edbedcbe"
            for content in (json.dumps(body).encode(), raw):
                response = client.request(
                    method, url, content=content, headers={**admin, "content-type": "application/json"}
                )
                assert response.status_code < 500, response.text
                if response.status_code >= 400:
                    assert response.headers["content-type"] == "application/problem+json"
                    assert response.json()["code"]

        check()
