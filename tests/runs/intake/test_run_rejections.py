"""Everything refused before the stream: problem+json with a stable ``code``, no stream, nothing stored."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.images import image_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import run, run_input, upload, user_message

Client = AsyncTestClient[Litestar]
Image = dict[str, Any]


def _url_part(image: Image, **source: Any) -> dict[str, Any]:
    part: dict[str, Any] = image["parts"]["agui"]
    return {**part, "source": {**part["source"], **source}}


# (name, content builder from a valid uploaded image, expected code, expected field suffix)
REJECTED: list[tuple[str, Callable[[Image], list[dict[str, Any]]], str, str]] = [
    (
        "openai image_url part",
        lambda i: [{"type": "image_url", "image_url": {"url": i["url"]}}],
        "image_url_part_unsupported",
        "content[0]",
    ),
    (
        "inline data source",
        lambda i: [
            {"type": "image", "source": {"type": "data", "value": "iVBORw0K", "mimeType": "image/png"}}
        ],
        "inline_data_unsupported",
        "content[0].source",
    ),
    (
        "legacy binary with data",
        lambda i: [{"type": "binary", "mimeType": "image/png", "data": "iVBORw0K"}],
        "inline_data_unsupported",
        "content[0].data",
    ),
    (
        "provider file handle",
        lambda i: [{"type": "image", "source": {"type": "file", "value": "file-abc", "provider": "openai"}}],
        "file_source_unsupported",
        "content[0].source",
    ),
    (
        "audio part naming an image upload",
        lambda i: [{"type": "audio", "source": {"type": "url", "value": i["url"], "mimeType": "audio/mpeg"}}],
        "unsupported_media_type",
        "content[0].source.value",
    ),
    (
        "video part",
        lambda i: [{"type": "video", "source": {"type": "url", "value": i["url"]}}],
        "media_kind_unsupported",
        "content[0]",
    ),
    (
        "document part naming an image upload",
        lambda i: [{"type": "document", "source": {"type": "url", "value": i["url"]}}],
        "unsupported_media_type",
        "content[0].source.value",
    ),
    (
        "binary with a pdf mime type naming an image upload",
        lambda i: [{"type": "binary", "mimeType": "application/pdf", "url": i["url"]}],
        "unsupported_media_type",
        "content[0].url",
    ),
    (
        "document source declaring audio",
        lambda i: [
            {"type": "document", "source": {"type": "url", "value": i["url"], "mimeType": "audio/wav"}}
        ],
        "unsupported_media_type",
        "content[0].source.mimeType",
    ),
    (
        "image source declaring gif",
        lambda i: [_url_part(i, mimeType="image/gif")],
        "unsupported_media_type",
        "content[0].source.mimeType",
    ),
    (
        "foreign URL",
        lambda i: [_url_part(i, value="https://evil.example.com/x.png")],
        "attachment_url_rejected",
        "content[0].source.value",
    ),
    (
        "URL with its token cut off",
        lambda i: [_url_part(i, value=i["url"].split("?")[0])],
        "attachment_url_rejected",
        "content[0].source.value",
    ),
    (
        "legacy binary with an unknown upload id",
        lambda i: [{"type": "binary", "mimeType": "image/png", "id": str(uuid.uuid4())}],
        "upload_not_found",
        "content[0].id",
    ),
    ("five images", lambda i: [i["parts"]["agui"]] * 5, "too_many_images", "messages[0]"),
    ("empty message", lambda i: [{"type": "text", "text": "  "}], "empty_message", "messages[0]"),
    ("wrongly typed text", lambda i: [{"type": "text", "text": 5}], "validation_failed", "content[0].text"),
]


@pytest.mark.parametrize(("name", "content", "code", "field"), REJECTED, ids=[r[0] for r in REJECTED])
async def test_each_refused_part_has_its_own_code_and_stores_nothing(
    client: Client,
    alice: dict[str, str],
    stored: Stored,
    name: str,
    content: Callable[[Image], list[dict[str, Any]]],
    code: str,
    field: str,
) -> None:
    thread = str(uuid.uuid4())
    image = await upload(client, alice, thread)
    message = {"id": "m1", "role": "user", "content": content(image)}
    response = await client.post("/agent/runs", json=run_input(thread, message), headers=alice)

    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["code"] == code, problem
    assert problem["field"].endswith(field), problem
    assert await stored.messages(thread) == []


async def test_a_legacy_binary_part_by_url_or_upload_id_is_accepted(
    client: Client, alice: dict[str, str]
) -> None:
    thread = str(uuid.uuid4())
    image = await upload(client, alice, thread)
    content = [
        {"type": "binary", "mimeType": "image/png", "url": image["url"], "filename": "a.png"},
        {"type": "binary", "mimeType": "image/png", "id": image["id"]},
    ]
    events = await run(client, alice, run_input(thread, {"id": "m1", "role": "user", "content": content}))
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_images_to_a_text_model_are_refused_before_any_stream(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    image = await upload(client, alice, thread)
    body = run_input(thread, user_message("what is it?", image["parts"]["agui"]), model="local/text")
    response = await client.post("/agent/runs", json=body, headers=alice)
    assert response.status_code == 422
    assert response.json()["code"] == "model_lacks_vision"
    assert await stored.messages(thread) == []
    assert await stored.run(body["runId"]) is None


async def test_an_existing_thread_loses_nothing_on_a_rejected_run(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    await run(client, alice, run_input(thread, user_message("hello")))
    before = [(m.role, m.content) for m in await stored.messages(thread)]
    image = await upload(client, alice, thread)
    bad = run_input(thread, user_message("and this?", image["parts"]["agui"]), model="local/text")
    assert (await client.post("/agent/runs", json=bad, headers=alice)).status_code == 422
    assert [(m.role, m.content) for m in await stored.messages(thread)] == before


@pytest.mark.parametrize(
    ("change", "status", "code", "field"),
    [
        ({"threadId": "a/b"}, 422, "invalid_thread_id", "threadId"),
        ({"threadId": "x" * 129}, 422, "invalid_thread_id", "threadId"),
        ({"threadId": ""}, 422, "invalid_thread_id", "threadId"),
        ({"runId": 5}, 422, "validation_failed", "runId"),
        ({"runId": ""}, 422, "invalid_id", "runId"),
        ({"messages": "hello"}, 422, "validation_failed", "messages"),
        ({"protocolVersion": "2.0"}, 422, "protocol_version_unsupported", "protocolVersion"),
        ({"forwardedProps": {"modelId": "nobody/nothing"}}, 422, "model_not_found", "forwardedProps.modelId"),
        ({"forwardedProps": {"agent": "ghost"}}, 404, "agent_not_found", "forwardedProps.agent"),
        ({"messages": []}, 422, "no_new_message", "messages"),
    ],
)
async def test_bad_run_input_is_a_problem_naming_the_field(
    client: Client, alice: dict[str, str], change: dict[str, Any], status: int, code: str, field: str
) -> None:
    body = {**run_input(str(uuid.uuid4()), user_message("hi")), **change}
    response = await client.post("/agent/runs", json=body, headers=alice)
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
    assert response.json().get("field") == field


async def test_malformed_json_is_a_problem_not_a_stream(client: Client, alice: dict[str, str]) -> None:
    response = await client.post(
        "/agent/runs", content=b"{not json", headers={**alice, "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "malformed_body"


async def test_runs_need_a_token(client: Client) -> None:
    response = await client.post("/agent/runs", json=run_input(str(uuid.uuid4()), user_message("hi")))
    assert response.status_code == 401
    assert response.json()["code"] == "missing_token"


async def test_someone_elses_thread_id_is_another_thread_and_a_run_id_is_used_once(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    thread = "shared-name"
    first = run_input(thread, user_message("mine"))
    await run(client, alice, first)

    # Thread ids are the client's and scoped to their owner: bob's "shared-name" is bob's own thread.
    bobs = await run(client, auth("bob"), run_input(thread, user_message("hi")))
    assert bobs[0]["threadId"] == thread
    assert [m.content for m in await stored.messages(thread, "bob") if m.role == "user"] == ["hi"]

    again = await client.post(
        "/agent/runs", json=run_input(thread, user_message("again"), run_id=first["runId"]), headers=alice
    )
    assert again.status_code == 409
    assert again.json()["code"] == "run_exists"
    assert [m.content for m in await stored.messages(thread) if m.role == "user"] == ["mine"]


async def test_someone_elses_upload_url_is_rejected(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]]
) -> None:
    bob = auth("bob")
    bobs_thread = str(uuid.uuid4())
    bobs_image = await upload(client, bob, bobs_thread, data=image_bytes("PNG", (10, 10)))
    response = await client.post(
        "/agent/runs",
        json=run_input(str(uuid.uuid4()), user_message("steal", bobs_image["parts"]["agui"])),
        headers=alice,
    )
    assert response.status_code == 422
    assert response.json()["code"] == "attachment_url_rejected"


async def test_an_image_of_another_thread_is_rejected(client: Client, alice: dict[str, str]) -> None:
    image = await upload(client, alice, str(uuid.uuid4()))
    by_id = {"type": "binary", "mimeType": "image/png", "id": image["id"]}
    for part, code in ((image["parts"]["agui"], "attachment_url_rejected"), (by_id, "upload_not_found")):
        body = run_input(str(uuid.uuid4()), {"id": "m", "role": "user", "content": [part]})
        response = await client.post("/agent/runs", json=body, headers=alice)
        assert response.status_code == 422
        assert response.json()["code"] == code
