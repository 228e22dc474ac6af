"""The answers agree with the rendered OpenAPI document where fuzzing (schemathesis) found them apart
(issue 27, defect 4): ``Allow`` headers, ids that are not UUIDs, catalogue ``options`` the schema
refuses, and the thread-id pattern of every place that takes one."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.threads import THREAD_ID_PATTERN
from tests.support.openapi import document as served_document

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]
METHODS = ("get", "put", "post", "delete", "patch")
SQLITE = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)  # engine-independent checks
NO_OPTIONS_KNOWN = "not-installed"  # a provider whose options Iris cannot know: only their shape is checked


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return served_document()


def _validator(document: dict[str, Any], schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({**schema, "components": document["components"]})


def _codes(operation: dict[str, Any], status: int) -> list[str]:
    answer = operation["responses"].get(str(status))
    if answer is None:
        return []
    codes: list[str] = answer["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"][
        "code"
    ]["enum"]
    return codes


@SQLITE
async def test_options_allow_lists_every_documented_method_of_the_path(
    document: dict[str, Any], client: Client
) -> None:
    values = {"modelId": str(uuid.uuid4()), "objectPath": "a/b.png", "index": "0"}
    checked = 0
    for path, item in document["paths"].items():
        documented = {m.upper() for m in METHODS if m in item} | {"OPTIONS"}
        names = [p["name"] for op in item.values() if isinstance(op, dict) for p in op.get("parameters", [])]
        url = path.format_map({**dict.fromkeys(names, "x"), **values})
        response = await client.options(url)
        assert response.status_code == 204, (path, response.text)
        allowed = {m.strip() for m in response.headers["allow"].split(",")}
        assert allowed == documented, (path, response.headers["allow"])
        checked += 1
    assert checked > 20


@SQLITE
@pytest.mark.parametrize("odd", ["not-a-uuid", "1", "%20", "3fa85f64-5717-4562-b3fc"])
async def test_an_id_that_is_no_uuid_answers_a_documented_code(
    document: dict[str, Any], client: Client, auth: Auth, odd: str
) -> None:
    item = document["paths"]["/api/models/{modelId}"]
    for method, body in (("patch", {"name": "x"}), ("delete", None)):
        response = await client.request(
            method.upper(), f"/api/models/{odd}", json=body, headers=auth("root", "admin")
        )
        assert response.status_code == 404, (method, response.text)
        assert response.json()["code"] == "model_not_found"
        assert "model_not_found" in _codes(item[method], 404)


NESTED_ARRAYS = {"x": [{"x": [[None, None]]}]}


@SQLITE
async def test_options_the_schema_refuses_are_refused(
    document: dict[str, Any], client: Client, auth: Auth
) -> None:
    """POST and PATCH take ``options`` exactly when ``ModelCreate``/``ModelUpdate`` accept them."""
    create = _validator(document, {"$ref": "#/components/schemas/ModelCreate"})
    update = _validator(document, {"$ref": "#/components/schemas/ModelUpdate"})
    base = {"name": "Odd", "provider": NO_OPTIONS_KNOWN, "modelId": "odd", "type": "text"}
    for options in (NESTED_ARRAYS, {"a": [[1]]}, {"a": {"b": [1, [2]]}}):
        body = {**base, "options": options}
        assert not create.is_valid(body)
        response = await client.post("/api/models", json=body, headers=auth("root", "admin"))
        assert response.status_code == 422, (options, response.text)
        assert response.json()["code"] == "invalid_option"
    accepted = {"a": [{"b": [1, "two", None, {"c": True}]}], "n": 1.5}
    assert create.is_valid({**base, "options": accepted})
    response = await client.post(
        "/api/models", json={**base, "options": accepted}, headers=auth("root", "admin")
    )
    assert response.status_code == 201, response.text
    model_id = response.json()["id"]
    assert not update.is_valid({"options": NESTED_ARRAYS})
    response = await client.patch(
        f"/api/models/{model_id}", json={"options": NESTED_ARRAYS}, headers=auth("root", "admin")
    )
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_option"


@SQLITE
async def test_listing_models_matches_its_response_schema(
    document: dict[str, Any], client: Client, auth: Auth
) -> None:
    """After every create the fuzzer tried, ``GET /api/models`` still validates (admins see ``options``)."""
    answer = document["paths"]["/api/models"]["get"]["responses"]["200"]["content"]["application/json"]
    listing = _validator(document, answer["schema"])
    for index, options in enumerate(
        ({"a": [{"b": [1]}]}, NESTED_ARRAYS, {"deep": {"er": [None, {"x": []}]}})
    ):
        body = {
            "name": "M",
            "provider": NO_OPTIONS_KNOWN,
            "modelId": f"m{index}",
            "type": "text",
            "options": options,
        }
        await client.post("/api/models", json=body, headers=auth("root", "admin"))
    for who in (auth("root", "admin"), auth("alice")):
        response = await client.get("/api/models", headers=who)
        assert response.status_code == 200
        listing.validate(response.json())
    admin_view = (await client.get("/api/models", headers=auth("root", "admin"))).json()["models"]
    assert {m["modelId"] for m in admin_view} >= {"m0", "m2"}
    assert "m1" not in {m["modelId"] for m in admin_view}  # refused, never stored


THREAD_ID_PLACES = {
    ("post", "/agent/runs", "body", "threadId"),
    ("post", "/agent/runs/resume", "body", "threadId"),
    ("post", "/api/agents/{slug}/chat", "body", "sessionId"),
    ("post", "/api/files", "form", "threadId"),
    ("post", "/api/file/upload", "form", "threadId"),
    ("get", "/agent/threads/{threadId}/messages", "path", "threadId"),
    ("get", "/api/agents/{slug}/chat/stream", "query", "sessionId"),
    ("get", "/api/agents/{slug}/sessions/{sessionId}/messages", "path", "sessionId"),
    ("get", "/api/agents/{slug}/sessions/{sessionId}/usage", "path", "sessionId"),
    ("delete", "/api/agents/{slug}/sessions/{sessionId}", "path", "sessionId"),
    ("patch", "/api/agents/{slug}/sessions/{sessionId}", "path", "sessionId"),
    ("post", "/api/agents/{slug}/sessions/{sessionId}/active", "path", "sessionId"),
    ("get", "/api/agents/{slug}/sessions/{sessionId}/export", "path", "sessionId"),
    (
        "post",
        "/api/agents/{slug}/sessions/{sessionId}/messages/{messageId}/resource-links/{index}/read",
        "path",
        "sessionId",
    ),
}
"""Every place a client sends a thread id (each is checked by ``check_thread_id``)."""


def _string_schema(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    branches: list[dict[str, Any]] = [b for b in schema.get("anyOf", [schema]) if b.get("type") == "string"]
    assert len(branches) == 1, schema
    return branches[0]


def _thread_id_schemas(document: dict[str, Any]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """(method, path, where, name) → the schema of every thread-id input the document has."""
    out = {}
    for path, item in document["paths"].items():
        for method, operation in ((m, op) for m, op in item.items() if m in METHODS):
            for parameter in operation.get("parameters", []):
                if parameter["name"] in ("threadId", "sessionId"):
                    out[method, path, parameter["in"], parameter["name"]] = parameter["schema"]
            for media, content in operation.get("requestBody", {}).get("content", {}).items():
                schema = content["schema"]
                if "$ref" in schema:
                    schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
                where = "form" if media == "multipart/form-data" else "body"
                for name in ("threadId", "sessionId"):
                    if name in schema.get("properties", {}):
                        out[method, path, where, name] = schema["properties"][name]
    return out


def test_every_thread_id_taken_is_documented_with_its_pattern(document: dict[str, Any]) -> None:
    found = _thread_id_schemas(document)
    assert set(found) == THREAD_ID_PLACES
    for place, schema in found.items():
        assert _string_schema(document, schema).get("pattern") == THREAD_ID_PATTERN, place


@SQLITE
async def test_a_thread_id_outside_the_pattern_is_refused_as_documented(
    document: dict[str, Any], client: Client, auth: Auth
) -> None:
    """The pattern is the server's: an id it breaks is 422 ``invalid_thread_id`` on the history route."""
    operation = document["paths"]["/agent/threads/{threadId}/messages"]["get"]
    response = await client.get("/agent/threads/has%20space/messages", headers=auth("alice"))
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_thread_id"
    assert "invalid_thread_id" in _codes(operation, 422)
