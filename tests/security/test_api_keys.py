"""API keys: made once, kept as a hash, usable wherever a token is, scoped, revoked."""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.security.api_keys import key_hash
from tests.support.runs import run_input, user_message
from tests.support.waits import REQUEST_SECONDS

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]


async def _make(client: Client, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    response = await client.post("/api/keys", json={"name": "ci", **body}, headers=headers)
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    return made


async def test_a_key_is_shown_once_kept_as_a_hash_and_works_like_a_token(
    client: Client, auth: Auth, database_url: str
) -> None:
    made = await _make(client, auth("alice"))
    key = made["key"]
    assert key.startswith("iris_sk_")
    assert key.startswith(made["prefix"])
    assert len(key) > 40
    assert made["owner"] == "alice"
    for headers in ({"Authorization": f"Bearer {key}"}, {"x-api-key": key}):
        assert (await client.get("/api/models", headers=headers)).status_code == 200
        assert (await client.get("/v1/models", headers=headers)).status_code == 200
    listed = (await client.get("/api/keys", headers=auth("alice"))).json()["keys"]
    assert [entry["id"] for entry in listed] == [made["id"]]
    assert "key" not in listed[0]
    assert listed[0]["lastUsedAt"] is not None
    assert (await client.get("/api/keys", headers=auth("bob"))).json()["keys"] == []
    if database_url.startswith("sqlite"):
        assert _stored_hashes(Path(database_url.split("///", 1)[1]), key) == [key_hash(key)]


def _stored_hashes(database: Path, key: str) -> list[str]:
    """The hashes the database file holds; the key itself must be nowhere in its bytes."""
    assert key.encode() not in database.read_bytes()
    with sqlite3.connect(database) as db:
        return [row[0] for row in db.execute("SELECT secret_hash FROM api_keys")]


async def test_only_admins_make_keys_for_others_and_guests_none(client: Client, auth: Auth) -> None:
    response = await client.post("/api/keys", json={"name": "x", "owner": "bob"}, headers=auth("alice"))
    assert (response.status_code, response.json()["code"]) == (403, "admin_required")
    response = await client.post("/api/keys", json={"name": "x", "role": "admin"}, headers=auth("alice"))
    assert (response.status_code, response.json()["code"]) == (403, "admin_required")
    guest = (await client.post("/api/auth/guest")).json()["accessToken"]
    response = await client.post(
        "/api/keys", json={"name": "x"}, headers={"Authorization": f"Bearer {guest}"}
    )
    assert (response.status_code, response.json()["code"]) == (403, "keys_not_for_guests")
    service = await _make(client, auth("root", role="admin"), owner="svc-nightly-ci")
    assert service["owner"] == "svc-nightly-ci"
    assert service["createdBy"] == "root"
    everyone = (await client.get("/api/keys", headers=auth("root", role="admin"))).json()["keys"]
    assert "svc-nightly-ci" in {entry["owner"] for entry in everyone}
    # the service key acts as its identity, and is no admin
    response = await client.get("/api/mcp-servers", headers={"x-api-key": service["key"]})
    assert (response.status_code, response.json()["code"]) == (403, "admin_required")


async def _refused_within(client: Client, key: str, seconds: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < REQUEST_SECONDS:
        response = await client.get("/api/models", headers={"x-api-key": key})
        if response.status_code == 401:
            assert response.json()["code"] == "invalid_api_key"
            return time.monotonic() - started
        await asyncio.sleep(0.1)
    raise AssertionError("the revoked key kept working")


async def test_a_revoked_key_is_refused_within_seconds(client: Client, auth: Auth) -> None:
    made = await _make(client, auth("alice"))
    assert (await client.get("/api/models", headers={"x-api-key": made["key"]})).status_code == 200
    other = await client.delete(f"/api/keys/{made['id']}", headers=auth("bob"))
    assert (other.status_code, other.json()["code"]) == (404, "api_key_not_found")
    assert (await client.delete(f"/api/keys/{made['id']}", headers=auth("alice"))).status_code == 204
    assert await _refused_within(client, made["key"], 5.0) < 5.0
    listed = (await client.get("/api/keys", headers=auth("alice"))).json()["keys"]
    assert listed[0]["revokedAt"] is not None
    unknown = await client.get("/api/models", headers={"x-api-key": "iris_sk_" + "x" * 43})
    assert (unknown.status_code, unknown.json()["code"]) == (401, "invalid_api_key")


async def test_scopes_refuse_other_surfaces_agents_and_models(client: Client, auth: Auth) -> None:
    only_openai = await _make(client, auth("alice"), scopes={"surfaces": ["openai"]})
    headers = {"Authorization": f"Bearer {only_openai['key']}"}
    assert (await client.get("/v1/models", headers=headers)).status_code == 200
    response = await client.get("/api/models", headers=headers)
    assert (response.status_code, response.json()["code"]) == (403, "key_surface_forbidden")

    other_agent = await _make(client, auth("alice"), scopes={"agents": ["someone-else"]})
    body = run_input(str(uuid.uuid4()), user_message("hi"))
    response = await client.post("/agent/runs", json=body, headers={"x-api-key": other_agent["key"]})
    assert (response.status_code, response.json()["code"]) == (403, "key_agent_forbidden")

    text_only = await _make(client, auth("alice"), scopes={"models": ["local/text"]})
    chat = {"model": "local/vision", "messages": [{"role": "user", "content": "hi"}]}
    response = await client.post("/v1/chat/completions", json=chat, headers={"x-api-key": text_only["key"]})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "key_model_forbidden"  # OpenAI's error shape under /v1
    body = run_input(str(uuid.uuid4()), user_message("hi"), model="local/vision")
    response = await client.post("/agent/runs", json=body, headers={"x-api-key": text_only["key"]})
    assert (response.status_code, response.json()["code"]) == (403, "key_model_forbidden")
    allowed = {**chat, "model": "local/text"}
    response = await client.post(
        "/v1/chat/completions", json=allowed, headers={"x-api-key": text_only["key"]}
    )
    assert response.status_code == 200, response.text


async def test_a_key_past_its_requests_per_minute_is_rate_limited_in_each_surfaces_shape(
    client: Client, auth: Auth
) -> None:
    await _clear_of_a_minute_boundary()
    made = await _make(client, auth("alice"), requestsPerMinute=3)
    assert made["requestsPerMinute"] == 3
    headers = {"x-api-key": made["key"]}
    assert [(await client.get("/api/models", headers=headers)).status_code for _ in range(3)] == [200] * 3
    refused = await client.get("/api/models", headers=headers)
    assert (refused.status_code, refused.json()["code"]) == (429, "rate_limited")
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    gateway = await client.get("/v1/models", headers=headers)
    assert gateway.status_code == 429
    assert gateway.json()["error"]["code"] == "rate_limited"  # OpenAI's error shape under /v1
    assert "retry-after" in gateway.headers
    assert (await client.get("/api/models", headers=auth("alice"))).status_code == 200  # the key's limit only


async def _clear_of_a_minute_boundary() -> None:
    """Limits count in fixed minutes: a test counting to a limit starts well inside one."""
    if time.time() % 60 > 50:
        await asyncio.sleep(61 - time.time() % 60)


async def test_an_admin_changes_a_keys_limits_and_its_owner_may_not(client: Client, auth: Auth) -> None:
    admin, alice = auth("root", "admin"), auth("alice")
    made = (await client.post("/api/keys", json={"name": "ci", "requestsPerMinute": 5}, headers=alice)).json()
    limits = {"tokensPerMinute": 1000, "budgetDayUsd": 2.5, "requestsPerMinute": None}
    refused = await client.patch(f"/api/keys/{made['id']}", json=limits, headers=alice)
    assert (refused.status_code, refused.json()["code"]) == (403, "admin_required")

    changed = await client.patch(f"/api/keys/{made['id']}", json=limits, headers=admin)
    assert changed.status_code == 200, changed.text
    (listed,) = (await client.get("/api/keys", headers=alice)).json()["keys"]
    shown = {name: listed[name] for name in ("tokensPerMinute", "budgetDayUsd", "budgetMonthUsd")}
    assert shown == {"tokensPerMinute": 1000, "budgetDayUsd": 2.5, "budgetMonthUsd": None}
    assert listed["requestsPerMinute"] is None  # null removed it
    missing = await client.patch(f"/api/keys/{uuid.uuid4()}", json=limits, headers=admin)
    assert (missing.status_code, missing.json()["code"]) == (404, "api_key_not_found")
    invalid = await client.patch(f"/api/keys/{made['id']}", json={"budgetDayUsd": -1.0}, headers=admin)
    assert invalid.status_code in (400, 422)
