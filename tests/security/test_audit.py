"""The audit log: a row for each admin change and each key's use from a new address; filtered, paged,
admins only; and never a key or token in the database or the logs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]


def _raw_database(database_url: str) -> bytes:
    """The SQLite file's bytes, write-ahead log included (empty for PostgreSQL)."""
    if not database_url.startswith("sqlite"):
        return b""
    path = Path(database_url.split("///", 1)[1])
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


async def _audit(client: Client, headers: dict[str, str], query: str = "") -> dict[str, Any]:
    response = await client.get(f"/api/audit{query}", headers=headers)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


async def test_admin_changes_and_key_use_are_logged_without_secrets(
    client: Client, auth: Auth, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    admin, alice = auth("root", "admin"), auth("alice")
    model = {"name": "audited", "provider": "local", "modelId": "audited", "type": "text"}
    assert (await client.post("/api/models", json=model, headers=admin)).status_code == 201
    made = (
        await client.post("/api/keys", json={"name": "ci"}, headers={**alice, "x-request-id": "req-1"})
    ).json()
    key = made["key"]
    assert (await client.get("/api/models", headers={"x-api-key": key})).status_code == 200
    assert (await client.delete(f"/api/keys/{made['id']}", headers=alice)).status_code == 204
    refused = await client.post("/api/models", json=model, headers=alice)
    assert refused.status_code == 403  # refused changes are not changes: no row

    entries = (await _audit(client, admin))["entries"]
    actions = [(e["actor"], e["action"]) for e in entries]
    assert actions == [
        ("alice", "DELETE /api/keys/{keyId}"),
        ("alice", "key used from a new address"),
        ("alice", "POST /api/keys"),
        ("root", "POST /api/models"),
    ]
    created = entries[2]
    assert created["requestId"] == "req-1"
    assert created["status"] == 201
    assert created["at"]
    assert entries[1]["actorKeyId"] == made["id"]
    assert entries[0]["target"] == f"/api/keys/{made['id']}"

    only_alice = (await _audit(client, admin, "?actor=alice&action=POST%20/api/keys"))["entries"]
    assert [e["action"] for e in only_alice] == ["POST /api/keys"]
    first = await _audit(client, admin, "?limit=3")
    rest = await _audit(client, admin, f"?limit=3&before={first['nextBefore']}")
    assert [e["id"] for e in first["entries"] + rest["entries"]] == [e["id"] for e in entries]
    assert rest["nextBefore"] is None
    forbidden = await client.get("/api/audit", headers=alice)
    assert (forbidden.status_code, forbidden.json()["code"]) == (403, "admin_required")

    secrets = [key, admin["Authorization"].split()[1], alice["Authorization"].split()[1]]
    stored = _raw_database(database_url)
    logged = caplog.text
    for secret in secrets:
        assert secret.encode() not in stored
        assert secret not in logged
