"""A signed URL as a browser uses it, for every backend: the bytes come back; an expired, tampered or
foreign token is refused; a vanished object is a clean 404; for S3, an unreachable store is a 503 with a
code, never a 500."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings, prepare
from iris.app.storage.factory import create_storage
from iris.app.storage.tokens import derive_storage_secret, sign_object_token
from tests.conftest import SUPABASE_JWT_SECRET
from tests.support.images import image_bytes
from tests.support.postgres import free_port

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]
THREAD = "5b0f9a8e-4a51-4a5e-9d55-7c1ad3b0a001"


@pytest.fixture
def engine_name() -> str:
    return "sqlite"  # storage behaviour; the database engines are covered elsewhere


@pytest.fixture(params=["local", "supabase", "s3"])
def storage_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


async def upload(client: Client, headers: dict[str, str], data: bytes) -> httpx.Response:
    return await client.post(
        "/api/files", files={"file": ("p.png", data, "image/png")}, data={"threadId": THREAD}, headers=headers
    )


async def fetch(client: Client, url: str) -> httpx.Response:
    """What a browser gets: Iris's own URLs from the app under test, Supabase's from the fake."""
    parts = urlsplit(url)
    if parts.port == 8000:
        return await client.get(f"{parts.path}?{parts.query}")
    async with httpx.AsyncClient() as http:
        return await http.get(url)


def url_secret(settings: Settings) -> str:
    return (
        SUPABASE_JWT_SECRET
        if settings.storage == "supabase"
        else derive_storage_secret(settings.jwt_secret or "")
    )


def refused(response: httpx.Response, settings: Settings, code: str) -> None:
    if settings.storage == "supabase":  # storage-api's answer to any bad token
        assert response.status_code == 400, response.text
        assert response.json()["error"] == "InvalidJWT"
        return
    assert response.status_code == 403, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == code


async def test_the_signed_url_serves_the_upload(client: Client, auth: Auth) -> None:
    data = image_bytes("PNG", size=(64, 48))
    body = (await upload(client, auth("alice"), data)).json()
    fetched = await fetch(client, body["url"])
    assert fetched.status_code == 200, fetched.text
    assert fetched.content == data
    assert fetched.headers["content-type"].startswith("image/png")


async def test_expired_tampered_and_foreign_tokens_are_refused(
    client: Client, auth: Auth, settings: Settings
) -> None:
    body = (await upload(client, auth("alice"), image_bytes("PNG"))).json()
    url, path = body["url"], body["path"]
    base, _, token = url.partition("?token=")
    secret = url_secret(settings)
    now = dt.datetime.now(dt.UTC)
    expired = sign_object_token(secret, "iris", path, now - dt.timedelta(seconds=5))
    forged = sign_object_token("not-the-secret-" * 3, "iris", path, now + dt.timedelta(hours=1))
    head, _, tail = token.rpartition(".")
    tampered = f"{head}.{tail[:-2]}{'AA' if not tail.endswith('AA') else 'BB'}"
    other_path = sign_object_token(secret, "iris", path.replace(".png", "0.png"), now + dt.timedelta(hours=1))

    refused(await fetch(client, f"{base}?token={expired}"), settings, "token_expired")
    refused(await fetch(client, f"{base}?token={forged}"), settings, "token_invalid")
    refused(await fetch(client, f"{base}?token={tampered}"), settings, "token_invalid")
    refused(await fetch(client, f"{base}?token={other_path}"), settings, "token_path_mismatch")
    assert (await fetch(client, url)).status_code == 200  # the real one still works


async def test_an_object_gone_from_the_store_is_a_clean_404(
    client: Client, auth: Auth, settings: Settings
) -> None:
    body = (await upload(client, auth("alice"), image_bytes("PNG"))).json()
    storage = create_storage(prepare(settings))
    try:
        await storage.delete(body["path"])
    finally:
        await storage.aclose()
    gone = await fetch(client, body["url"])
    assert gone.status_code in ({400, 404} if settings.storage == "supabase" else {404}), gone.text
    if settings.storage != "supabase":
        assert gone.headers["content-type"] == "application/problem+json"
        assert gone.json()["code"] == "object_not_found"


@pytest.mark.parametrize("storage_kind", ["s3"])
async def test_an_unreachable_s3_is_a_503_with_a_code(client: Client, auth: Auth, settings: Settings) -> None:
    data = image_bytes("PNG")
    body = (await upload(client, auth("alice"), data)).json()
    down = msgspec.structs.replace(
        settings, s3_endpoint_url=f"http://127.0.0.1:{free_port()}", s3_timeout_seconds=2
    )
    async with AsyncTestClient(app=create_app(down, environ={})) as unreachable:
        for response in (
            await unreachable.get(urlsplit(body["url"]).path + "?" + urlsplit(body["url"]).query),
            await upload(unreachable, auth("alice"), data),
        ):
            assert response.status_code == 503, response.text
            assert response.headers["content-type"] == "application/problem+json"
            assert response.json()["code"] == "storage_unavailable"
