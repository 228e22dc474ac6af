"""The OpenAPI document is complete enough to generate a typed client from, and tells the truth."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint
from typing import Any, get_args

import jsonschema
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from openapi_spec_validator import validate

from iris.app.api.openapi.document import STREAM_EVENT
from iris.app.asgi import create_app
from iris.app.settings import Settings
from iris.tools import ToolPluginContext
from iris.tools.registry import GROUP, ToolRegistry
from tests.support.agui import check_stream
from tests.support.openapi import ProblemLog
from tests.support.openapi import document as served_document
from tests.support.run_fixtures import Stored
from tests.support.runs import run_input, user_message

Client = AsyncTestClient[Litestar]
METHODS = ("get", "put", "post", "delete", "patch")
_TYPED = ("type", "$ref", "oneOf", "anyOf", "allOf", "enum", "const")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return served_document()


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                yield method, path, item[method]


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        found: dict[str, Any] = document["components"]["schemas"][name]
        return found
    return schema


def untyped(document: dict[str, Any], schema: dict[str, Any], where: str, seen: set[str]) -> Iterator[str]:
    """Where a schema reachable from ``schema`` says nothing about its values."""
    ref = schema.get("$ref")
    if ref is not None:
        if ref in seen:
            return
        seen.add(ref)
        schema, where = resolve(document, schema), ref
    if not any(key in schema for key in _TYPED):
        yield f"{where}: no type ({schema})"
    if schema.get("type") == "object" or "properties" in schema:
        extra = schema.get("additionalProperties")
        if not schema.get("properties") and not isinstance(extra, dict):
            yield f"{where}: an object with no declared keys or value type"
        if extra is True or extra == {}:
            yield f"{where}: untyped additionalProperties"
        for name, sub in schema.get("properties", {}).items():
            yield from untyped(document, sub, f"{where}.{name}", seen)
        if isinstance(extra, dict) and extra:
            yield from untyped(document, extra, f"{where}[*]", seen)
    if schema.get("type") == "array":
        if not isinstance(schema.get("items"), dict):
            yield f"{where}: an array with no item type"
        else:
            yield from untyped(document, schema["items"], f"{where}[]", seen)
    for key in ("oneOf", "anyOf", "allOf"):
        for index, sub in enumerate(schema.get(key, [])):
            yield from untyped(document, sub, f"{where}.{key}[{index}]", seen)


def test_the_document_is_valid_openapi(document: dict[str, Any]) -> None:
    validate(document)


def test_no_request_or_response_schema_is_untyped(document: dict[str, Any]) -> None:
    found: list[str] = []
    for method, path, operation in operations(document):
        parts = {"request": operation.get("requestBody", {}), **operation["responses"]}
        for name, part in parts.items():
            for media, content in part.get("content", {}).items():
                where = f"{method.upper()} {path} {name} {media}"
                if "schema" not in content:
                    found.append(f"{where}: no schema")
                    continue
                found.extend(untyped(document, content["schema"], where, set()))
    assert found == []


def test_the_walk_catches_an_untyped_schema(document: dict[str, Any]) -> None:
    """The check above can fail: Litestar's own schema of the run input has untyped parts."""
    loose = {"type": "object", "properties": {"state": {}, "props": {"type": "object"}}}
    assert len(list(untyped(document, loose, "x", set()))) == 2


def test_the_ai_sdk_surface_streams_ui_message_chunks(document: dict[str, Any]) -> None:
    """``/ui-chat`` answers the AI SDK's chunk union, discriminated by ``type``, one schema per chunk."""
    streams = {
        operation["operationId"]: operation["responses"]["200"]["content"]["text/event-stream"]["schema"]
        for _, path, operation in operations(document)
        if "/ui-chat" in path
        and "200" in operation["responses"]
        and "text/event-stream" in operation["responses"]["200"].get("content", {})
    }
    assert streams == {
        name: {"$ref": "#/components/schemas/UiMessageServerSentEvent"} for name in ("UiChat", "UiChatStream")
    }
    data = document["components"]["schemas"]["UiMessageServerSentEvent"]["properties"]["data"]["oneOf"]
    assert data[0]["contentSchema"] == {"$ref": "#/components/schemas/UiMessageChunk"}
    assert data[1]["const"] == "[DONE]"
    union = document["components"]["schemas"]["UiMessageChunk"]
    kinds = [resolve(document, s)["properties"]["type"]["const"] for s in union["oneOf"]]
    for kind in ("start", "text-delta", "tool-approval-request", "file", "data-usage", "finish", "error"):
        assert kind in kinds


def test_every_stream_is_the_agui_event_union(document: dict[str, Any]) -> None:
    streams = {
        operation["operationId"]: operation["responses"]["200"]["content"]["text/event-stream"]["schema"]
        for _, path, operation in operations(document)
        if "text/event-stream" in operation["responses"].get("200", {}).get("content", {})
        and not path.startswith("/v1/")  # the OpenAI gateway streams OpenAI's chunks (below)
        and "/ui-chat" not in path  # the AI SDK's surface streams its chunks (below)
    }
    assert set(streams) == {"RunAgent", "ResumeRun", "RunEvents", "Chat", "ChatStream", "StatelessChat"}
    assert all(schema == {"$ref": "#/components/schemas/AgUiServerSentEvent"} for schema in streams.values())
    event = document["components"]["schemas"]["AgUiServerSentEvent"]  # OpenAPI 3.1: `schema` is one event
    assert event["properties"]["data"]["contentMediaType"] == "application/json"
    assert event["properties"]["data"]["contentSchema"] == {"$ref": "#/components/schemas/AgUiEvent"}
    union = document["components"]["schemas"]["AgUiEvent"]
    tags = {msgspec.inspect.type_info(event).tag: event.__name__ for event in get_args(STREAM_EVENT)}  # type: ignore[attr-defined]
    assert union["discriminator"]["propertyName"] == "type"
    assert {k: v.rpartition("/")[2] for k, v in union["discriminator"]["mapping"].items()} == tags
    assert [resolve(document, s)["title"] for s in union["oneOf"]] == list(tags.values())


def test_iris_metadata_is_typed(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    end = resolve(document, schemas["TextMessageEnd"]["properties"]["metadata"])
    assert end["properties"]["iris/workerAgentOutput"] == {"$ref": "#/components/schemas/WorkerAgentOutput"}
    result = resolve(document, schemas["ToolCallResult"]["properties"]["metadata"])
    assert result["properties"]["iris/toolAgentOutput"] == {"$ref": "#/components/schemas/ToolAgentOutput"}
    started = resolve(document, schemas["RunStarted"]["properties"]["metadata"])
    assert started["properties"]["iris/ignoredResumeEntries"]["items"] == {"type": "string"}
    interrupt = resolve(document, schemas["Interrupt"]["properties"]["metadata"])
    assert "iris/toolCall" in interrupt["properties"]
    for metadata in (end, result, started, interrupt):
        assert metadata["additionalProperties"] == {"$ref": "#/components/schemas/JsonValue"}


def test_run_input_and_chat_bodies_are_typed(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    run = schemas["RunAgentInput"]["properties"]
    assert run["messages"]["items"]["discriminator"]["propertyName"] == "role"
    assert set(run["messages"]["items"]["discriminator"]["mapping"]) == {
        "developer",
        "system",
        "assistant",
        "user",
        "tool",
    }
    user = schemas["UserMessage"]["properties"]["content"]["anyOf"][1]["items"]
    assert set(user["discriminator"]["mapping"]) == {"text", "image", "document", "audio", "binary"}
    image_source = schemas["ImageInputContent"]["properties"]["source"]
    assert image_source == {"$ref": "#/components/schemas/InputContentUrlSource"}  # images: upload first
    for kind in ("DocumentInputContent", "AudioInputContent"):
        source = schemas[kind]["properties"]["source"]
        assert set(source["discriminator"]["mapping"]) == {"url", "data"}, kind
    data = schemas["InputContentDataSource"]
    assert set(data["required"]) == {"type", "value", "mimeType"}
    binary = schemas["BinaryInputContent"]["properties"]
    assert "data" in binary
    assert "application/pdf" in binary["mimeType"]["enum"]
    props = resolve(document, run["forwardedProps"]["anyOf"][0])
    assert {"modelId", "agent", "enableTools"} <= set(props["properties"])
    assert props["additionalProperties"] == {"$ref": "#/components/schemas/JsonValue"}
    for body in ("ChatRequest", "LlmChatRequest"):
        parts = schemas[body]["properties"]["parts"]["anyOf"][0]["items"]
        assert set(parts["discriminator"]["mapping"]) == {"text", "image"}
    form = document["paths"]["/api/files"]["post"]["requestBody"]["content"]["multipart/form-data"]
    assert form["schema"]["required"] == ["file", "threadId"]


def test_path_parameters_are_camel_case(document: dict[str, Any]) -> None:
    names = {
        p["name"]
        for _, _, operation in operations(document)
        for p in operation.get("parameters", [])
        if p["in"] == "path"
    }
    assert names == {
        "slug",
        "bucket",
        "objectPath",
        "modelId",
        "runId",
        "threadId",
        "sessionId",
        "chatId",
        "name",
        "model",
        "responseId",
        "keyId",
        "messageId",
        "index",
    }
    # A vendor's API keeps its own paths (Anthropic's /v1/messages/count_tokens).
    assert all("_" not in path for path in document["paths"] if not path.startswith("/v1/"))


def test_every_error_is_a_problem_and_summaries_come_from_docstrings(document: dict[str, Any]) -> None:
    for method, path, operation in operations(document):
        assert operation["summary"], (method, path)
        assert operation["description"], (method, path)
        assert "``" not in operation["description"]
        errors = {s: r for s, r in operation["responses"].items() if s >= "400"}
        assert "500" in errors
        for status, response in errors.items():
            if path.startswith("/v1/"):  # the vendor's error object, as the vendor's clients parse it
                assert _documented_codes(response, gateway=True), (method, path, status)
                continue
            (schema,) = response["content"]["application/problem+json"]["schema"]["allOf"][1:]
            assert schema["properties"]["status"]["const"] == int(status)
            assert schema["properties"]["code"]["enum"], (method, path, status)


def _url(path: str, operation: dict[str, Any]) -> str:
    """The path with made-up parameters, and every required query parameter."""
    values = {
        "slug": "default",
        "bucket": "b",
        "objectPath": "a/b.png",
        "modelId": str(uuid.uuid4()),
        "model": "a/b",
    }
    ids = {"runId": "r", "threadId": str(uuid.uuid4()), "sessionId": "s", "chatId": "c", "name": "n"}
    ids["responseId"] = "resp_x"
    ids["keyId"] = str(uuid.uuid4())
    ids |= {"messageId": "m", "index": "0"}
    url = path.format_map({**values, **ids})
    query = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query" and p["required"]]
    return url + ("?" + "&".join(f"{name}=x" for name in query) if query else "")


def _documented_codes(response: dict[str, Any], gateway: bool) -> list[str]:
    if gateway:  # OpenAI's error.code, or Anthropic's error.details.error_code
        schema = response["content"]["application/json"]["schema"]["allOf"][1]
        error = schema["properties"]["error"]["properties"]
        codes: list[str] = (
            error["details"]["properties"]["error_code"]["enum"]
            if "details" in error
            else error["code"]["enum"]
        )
        return codes
    problem: list[str] = response["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"][
        "code"
    ]["enum"]
    return problem


def _answered_code(body: dict[str, Any], gateway: bool) -> str:
    if gateway:
        error = body["error"]
        return str(error["details"]["error_code"] if "details" in error else error["code"])
    return str(body["code"])


async def test_documented_shared_errors_are_what_the_server_answers(
    document: dict[str, Any], client: Client, auth: Callable[..., dict[str, str]]
) -> None:
    """Probe every operation: without a token, and with a body that is not JSON."""
    probed = 0
    for method, path, operation in operations(document):
        gateway = path.startswith("/v1/")  # errors in OpenAI's shape: {"error": {..., "code"}}
        documented = {
            s: _documented_codes(r, gateway) for s, r in operation["responses"].items() if s >= "400"
        }
        if operation.get("security"):
            response = await client.request(method, _url(path, operation))
            assert response.status_code == 401, (method, path)
            assert _answered_code(response.json(), gateway) in documented["401"]
            probed += 1
        else:
            assert "401" not in documented, (method, path)
        json_body = "application/json" in operation.get("requestBody", {}).get("content", {})
        if json_body:
            headers = {**auth("root", "admin"), "content-type": "application/json"}
            response = await client.request(
                method, _url(path, operation), content=b"{not json", headers=headers
            )
            assert response.status_code == 400, (method, path, response.text)
            assert _answered_code(response.json(), gateway) in documented["400"]
            probed += 1
        else:
            assert "413" not in documented or "multipart/form-data" in operation["requestBody"]["content"]
    assert probed > 20


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
async def test_a_real_stream_matches_the_documented_events(
    document: dict[str, Any], client: Client, auth: Callable[..., dict[str, str]]
) -> None:
    """Every event of a real run validates against ``AgUiEvent`` (metadata included), and the run
    input the tests send validates against ``RunAgentInput``."""
    body = run_input(str(uuid.uuid4()), user_message("hi"), model="local/text")
    root = {"components": document["components"]}
    jsonschema.validate(body, {"$ref": "#/components/schemas/RunAgentInput", **root})
    response = await client.post("/agent/runs", json=body, headers=auth("alice"))
    assert response.status_code == 200, response.text
    events = check_stream(response.content)
    validator = jsonschema.Draft202012Validator({"$ref": "#/components/schemas/AgUiEvent", **root})
    for event in events:
        validator.validate(event)
    assert any("iris/workerAgentOutput" in e.get("metadata", {}) for e in events)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**events[0], "threadId": 7})


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
async def test_the_newer_events_match_the_documented_events(
    document: dict[str, Any], settings: Settings, database_url: str, auth: Callable[..., dict[str, str]]
) -> None:
    """A tool reporting progress (``ACTIVITY_SNAPSHOT``/``ACTIVITY_DELTA``) and a re-attach asking for
    the conversation (``MESSAGES_SNAPSHOT``): every event validates against ``AgUiEvent``."""
    steps = EntryPoint(name="steps", value="tests.plugins.tools:steps", group=GROUP)
    registry = ToolRegistry(ToolPluginContext(environ={}), entry_points_=[steps])
    root = {"components": document["components"]}
    validator = jsonschema.Draft202012Validator({"$ref": "#/components/schemas/AgUiEvent", **root})
    body = run_input(str(uuid.uuid4()), user_message('use tool steps {"count": 2}'))
    async with AsyncTestClient(app=create_app(settings, environ={}, tool_registry=registry)) as client:
        await Stored(database_url).set_agent_tools(["steps"])  # the default agent is seeded on startup
        response = await client.post("/agent/runs", json=body, headers=auth("alice"))
        assert response.status_code == 200, response.text
        events = check_stream(response.content)
        again = await client.get(
            f"/agent/runs/{body['runId']}/events?snapshot=messages", headers=auth("alice")
        )
        assert again.status_code == 200, again.text
        events += check_stream(again.content)
    kinds = {event["type"] for event in events}
    assert {"ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "MESSAGES_SNAPSHOT"} <= kinds, kinds
    for event in events:
        validator.validate(event)


async def test_the_suite_checks_every_problem_it_provokes(app: Litestar) -> None:
    """The ``client`` fixture's check records real answers, and flags one the document does not list."""
    log = ProblemLog()
    async with AsyncTestClient(app=app) as client:
        client.event_hooks["response"].append(log)
        await client.get("/agent/runs/r/events")  # no token: 401 missing_token, documented
    assert log.seen == [("GET", "/agent/runs/r/events", 401, "missing_token")]
    assert log.undocumented() == []
    log.seen.append(("GET", "/agent/runs/r/events", 409, "run_exists"))
    assert log.undocumented() == ["GET /agent/runs/r/events answered 409 run_exists"]
