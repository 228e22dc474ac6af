"""What fuzzing the OpenAPI document found (issue 41, defect 13), one focused test each: the answer is
what the document says, on both engines where a database is involved."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.agui.events import RunError
from iris.app.api.openai.errors import run_failure
from iris.app.api.paging import POSITION_MAX
from iris.app.media.multipart import MAX_PARTS
from tests.support.openapi import document
from tests.support.runs import CHAT, chat, run_input, user_message

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]
SQLITE = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)  # no database involved
HUGE = 76994672331391604264060109979648  # the offset the fuzzer sent: no engine's integer holds it


def _parameter(path: str, method: str, name: str) -> dict[str, Any]:
    operation = document()["paths"][path][method]
    found: dict[str, Any] = next(p for p in operation["parameters"] if p["name"] == name)
    return found


async def test_a_page_past_any_integer_is_refused_not_a_500(client: Client, auth: Auth) -> None:
    """``offset``/``after`` beyond what a query can bind: 422 ``validation_failed``, never a 500."""
    alice = auth("alice")
    started = (await chat(client, alice, {"content": "hello"}))[0]
    session, run = started["threadId"], started["runId"]
    pages = [
        f"/api/agents/default/sessions?archived=true&offset={HUGE}",
        f"/api/agents/default/sessions?offset={POSITION_MAX + 1}",
        f"/api/agents/default/sessions/{session}/messages?after={HUGE}",
        f"/agent/threads/{session}/messages?after={HUGE}",
        f"/agent/runs/{run}/events?after={HUGE}",
    ]
    for url in pages:
        response = await client.get(url, headers=alice)
        assert response.status_code == 422, (url, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "validation_failed"
    header = {**alice, "Last-Event-ID": str(HUGE)}
    response = await client.get(f"/agent/runs/{run}/events", headers=header)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_event_id"
    last = await client.get(f"/api/agents/default/sessions?offset={POSITION_MAX}", headers=alice)
    assert last.status_code == 200, last.text
    assert last.json()["sessions"] == []


def test_every_offset_and_position_parameter_says_its_bounds() -> None:
    for path, method, name, low in (
        ("/api/agents/{slug}/sessions", "get", "offset", 0),
        ("/agent/runs/{runId}/events", "get", "after", 0),
        ("/api/agents/{slug}/sessions/{sessionId}/messages", "get", "after", -1),
        ("/agent/threads/{threadId}/messages", "get", "after", -1),
    ):
        schema = _parameter(path, method, name)["schema"]
        assert (schema["minimum"], schema["maximum"]) == (low, POSITION_MAX), (path, name)


def _accepts(path: str, method: str, body: dict[str, Any]) -> bool:
    """Whether the document's JSON request schema of the operation accepts ``body``."""
    doc = document()
    schema = doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    validator = jsonschema.Draft202012Validator({**schema, "components": doc["components"]})
    return bool(validator.is_valid(body))


def _codes(path: str, method: str, status: int) -> list[str]:
    answer = document()["paths"][path][method]["responses"][str(status)]
    media = answer["content"].get("application/problem+json") or answer["content"]["application/json"]
    schema = media["schema"]["allOf"][1]["properties"]
    enum: list[str] = (schema["error"]["properties"] if "error" in schema else schema)["code"]["enum"]
    return enum


Refusal = tuple[str, str, str, dict[str, Any], int, str]
"""(method, document path, URL, body, status, code): a body the server refuses with that answer."""


async def _refused_as_documented(client: Client, headers: dict[str, str], refusals: list[Refusal]) -> None:
    """Each body is refused by the server, as stated, and the document refuses it too."""
    for method, path, url, body, status, code in refusals:
        response = await client.request(method.upper(), url, json=body, headers=headers)
        assert response.status_code == status, (url, body, response.text)
        answer = response.json()
        assert (answer["error"] if url.startswith("/v1") else answer)["code"] == code, (url, body, answer)
        assert code in _codes(path, method, status), (url, code)
        assert not _accepts(path, method, body), f"the document accepts {body} on {method} {path}"


@SQLITE
async def test_unknown_fields_and_constraints_the_server_checks_are_documented(
    client: Client, auth: Auth
) -> None:
    """Bodies Litestar documented loosely: unknown fields, items' lengths, exclusive minimums, patterns."""
    admin = auth("root", "admin")
    session = (await chat(client, admin, {"content": "hello"}))[0]["threadId"]
    model = await client.post(
        "/api/models", json={"name": "M", "provider": "local", "modelId": "m", "type": "text"}, headers=admin
    )
    mcp = await client.post(
        "/api/mcp-servers",
        json={"name": "off", "transport": "stdio", "command": "true", "enabled": False},
        headers=admin,
    )
    assert (model.status_code, mcp.status_code) == (201, 201), (model.text, mcp.text)
    one_session = "/api/agents/{slug}/sessions/{sessionId}"
    sessions = f"/api/agents/default/sessions/{session}"
    await _refused_as_documented(
        client,
        admin,
        [
            ("patch", one_session, sessions, {"pinned": True, "": 1}, 422, "validation_failed"),
            (
                "post",
                one_session + "/active",
                sessions + "/active",
                {"messageId": "x", "j": 1},
                422,
                "validation_failed",
            ),
            ("patch", "/api/agents/{slug}", "/api/agents/default", {"tools": [""]}, 422, "validation_failed"),
            (
                "patch",
                "/api/mcp-servers/{name}",
                "/api/mcp-servers/off",
                {"connectTimeoutSeconds": 0.0},
                422,
                "validation_failed",
            ),
            (
                "patch",
                "/api/models/{modelId}",
                f"/api/models/{model.json()['id']}",
                {"fallbacks": [""]},
                422,
                "validation_failed",
            ),
            (
                "post",
                "/api/mcp-servers",
                "/api/mcp-servers",
                {"name": "nel", "transport": "http", "url": "https://a\x85b"},
                422,
                "validation_failed",
            ),
        ],
    )
    url_pattern = document()["components"]["schemas"]["HttpServerCreate"]["properties"]["url"]["pattern"]
    assert "\\s" not in url_pattern  # ECMA-262's \s and Python's differ (U+0085, U+FEFF)


@SQLITE
async def test_rules_across_fields_are_documented(client: Client, auth: Auth) -> None:
    """Ids, an agent's models, /resume's answers, a chat's one request, a binary part's one source,
    export times with offsets: refused by the server and by the document alike."""
    admin = auth("root", "admin")
    thread = "fuzz-thread"
    binary = {"type": "binary", "mimeType": "image/png"}
    export = {"format": "iris.session", "version": 1, "session": {}, "messages": []}
    await _refused_as_documented(
        client,
        admin,
        [
            (
                "post",
                "/agent/runs",
                "/agent/runs",
                run_input(thread, user_message("hi"), runId=""),
                422,
                "invalid_id",
            ),
            (
                "post",
                "/agent/runs",
                "/agent/runs",
                run_input(thread, user_message("hi"), runId="réponse"),
                422,
                "invalid_id",
            ),
            (
                "post",
                "/agent/runs",
                "/agent/runs",
                run_input(thread, {"id": "", "role": "user", "content": "hi"}),
                422,
                "invalid_id",
            ),
            (
                "post",
                "/agent/runs",
                "/agent/runs",
                run_input(thread, user_message(None, binary)),
                422,
                "validation_failed",
            ),
            (
                "post",
                "/agent/runs/resume",
                "/agent/runs/resume",
                run_input(thread, resume=[]),
                422,
                "resume_required",
            ),
            ("post", "/api/agents", "/api/agents", {"slug": "a", "name": "A"}, 422, "validation_failed"),
            (
                "post",
                "/api/agents",
                "/api/agents",
                {"slug": "", "name": "A", "defaultModel": "local/text"},
                422,
                "invalid_agent_slug",
            ),
            (
                "post",
                "/api/agents/{slug}/chat",
                CHAT,
                {"content": "x", "editMessageId": "m", "regenerate": True},
                422,
                "validation_failed",
            ),
            (
                "post",
                "/api/agents/{slug}/chat",
                CHAT,
                {"content": "x", "regenerate": True, "resume": [{"interruptId": "i", "status": "cancelled"}]},
                422,
                "validation_failed",
            ),
            ("post", "/api/llm/chat", "/api/llm/chat", {"modelId": "local/text"}, 422, "empty_message"),
            (
                "post",
                "/api/agents/{slug}/sessions/import",
                "/api/agents/default/sessions/import",
                {**export, "exportedAt": "2026-01-01T00:00:00"},
                422,
                "validation_failed",
            ),
        ],
    )


@SQLITE
async def test_the_openai_body_is_documented_as_checked(client: Client, auth: Auth) -> None:
    """``n``, ``response_format`` and ``file`` parts as Iris takes them; a tool result answering no call
    has its own documented code. Errors in OpenAI's shape."""
    alice = auth("alice")
    hello = [{"role": "user", "content": "hi"}]
    pdf = [{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}]
    stray = [*hello, {"role": "tool", "tool_call_id": "call_9", "content": "42"}]
    path = "/v1/chat/completions"
    await _refused_as_documented(
        client,
        alice,
        [
            (
                "post",
                path,
                path,
                {"model": "local/text", "messages": hello, "n": 2},
                400,
                "validation_failed",
            ),
            (
                "post",
                path,
                path,
                {"model": "local/text", "messages": hello, "response_format": {"type": "json_schema"}},
                400,
                "validation_failed",
            ),
            ("post", path, path, {"model": "local/text", "messages": pdf}, 400, "file_source_unsupported"),
        ],
    )
    response = await client.post(path, json={"model": "local/text", "messages": stray}, headers=alice)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "tool_call_unknown"
    assert "tool_call_unknown" in _codes(path, "post", 400)


@SQLITE
async def test_uploads_signed_urls_and_usage_are_documented_as_answered(client: Client, auth: Auth) -> None:
    """An empty file and too many form parts, a signed URL without its token, a bad session id on the
    usage route (the ``client`` fixture checks every problem is documented)."""
    alice = auth("alice")
    form = document()["paths"]["/api/files"]["post"]["requestBody"]["content"]["multipart/form-data"][
        "schema"
    ]
    assert form["properties"]["file"]["minLength"] == 1
    assert form["maxProperties"] == MAX_PARTS
    empty = await client.post(
        "/api/files", files={"file": ("e.png", b"", "image/png")}, data={"threadId": "t"}, headers=alice
    )
    assert empty.status_code == 422, empty.text
    assert empty.json()["code"] == "file_missing"
    signed = document()["paths"]["/storage/v1/object/sign/{bucket}/{objectPath}"]["get"]["parameters"]
    token = next(p for p in signed if p["name"] == "token")
    assert token["required"] is True
    assert token["schema"]["minLength"] == 1
    usage = await client.get("/api/agents/default/sessions/%C2%84/usage", headers=alice)
    assert usage.status_code == 422, usage.text
    assert usage.json()["code"] == "invalid_thread_id"


def test_a_v1_stream_that_fails_ends_with_an_item_its_schema_accepts() -> None:
    """A streamed ``/v1`` run that fails sends OpenAI's ``{"error": …}`` as its (first) event: the
    document's item schema for ``text/event-stream`` must accept it, as well as the chunks."""
    doc = document()
    answer = doc["paths"]["/v1/chat/completions"]["post"]["responses"]["200"]["content"]
    items = jsonschema.Draft202012Validator({**answer["text/event-stream"]["schema"], **doc})
    failed = RunError(message="The model is unavailable.", code="provider_unavailable")
    _, chunk = run_failure(failed)
    items.validate(msgspec.to_builtins(chunk))
    started = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "local/text",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
    }
    items.validate(started)
