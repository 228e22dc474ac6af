"""Everything under ``/v1`` answers in OpenAI's error shape, routing errors included: a path Iris does
not serve (``POST /v1/embeddings``, which the ``openai`` SDKs' ``embeddings.create`` calls) is OpenAI's 404
``unknown_url``, a method a path does not take its 405, so each SDK raises its own error class rather
than failing to parse Iris's problem+json. Outside ``/v1`` routing errors stay problem+json."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.gateway.conftest import Gateway, token
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

ERROR_KEYS = {"message", "type", "param", "code"}


def _openai_error(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, object] = body["error"]
    assert set(error) == ERROR_KEYS
    assert (error["type"], error["code"]) == ("invalid_request_error", code)
    assert isinstance(error["message"], str)
    assert error["message"]
    return error


ROUTING_ERRORS = (
    ("GET", "/v1/nothing/here", 404, "unknown_url"),
    ("GET", "/v1", 404, "unknown_url"),
    ("POST", "/v1/embeddings", 404, "unknown_url"),
    ("GET", "/v1/chat/completions", 405, "method_not_allowed"),
    ("DELETE", "/v1/models", 405, "method_not_allowed"),
    ("PUT", "/v1/responses", 405, "method_not_allowed"),
)


def test_routing_errors_under_v1_are_openais_shape(gateway: Gateway) -> None:
    headers = {"Authorization": f"Bearer {token('router')}"}
    for method, path, status, code in ROUTING_ERRORS:  # one server for all: each case is one request
        response = httpx.request(method, gateway.base + path, headers=headers, timeout=REQUEST_SECONDS)
        error = _openai_error(response, status, code)
        assert path in str(error["message"])
        assert error["param"] is None
        if status == 405:
            assert response.headers["allow"]  # the methods the path does take, as elsewhere


def test_the_sdk_raises_its_not_found_error_for_an_api_iris_lacks(gateway: Gateway) -> None:
    sdk = openai.OpenAI(base_url=gateway.v1, api_key=token("sdk"), timeout=REQUEST_SECONDS, max_retries=0)
    with pytest.raises(openai.NotFoundError) as raised:
        sdk.embeddings.create(model="openai/gpt-4o", input="Hi")
    assert raised.value.code == "unknown_url"
    assert raised.value.type == "invalid_request_error"
    assert gateway.openai.requests == []


def test_routing_errors_elsewhere_stay_problem_json(gateway: Gateway) -> None:
    response = httpx.get(gateway.base + "/v1x/models", timeout=REQUEST_SECONDS)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "route_not_found"
