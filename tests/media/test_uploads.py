"""POST /api/files with real Pillow images, on both storage backends and both databases."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.persistence.db import create_engine
from iris.app.persistence.repositories import AgentRepository, SessionRepository, utcnow
from iris.app.settings import Settings
from iris.app.storage.tokens import derive_storage_secret, sign_object_token
from tests.support.images import (
    SVG,
    TEXT,
    image_bytes,
    noise_png,
    png_bomb,
    png_with_huge_icc_profile,
)
from tests.support.uploads import THREAD, count_uploads, download, stored_objects, upload

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]


@pytest.fixture(params=["local", "supabase", "s3"])
def storage_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.mark.parametrize(
    ("fmt", "mime", "ext"),
    [("PNG", "image/png", "png"), ("JPEG", "image/jpeg", "jpg"), ("WEBP", "image/webp", "webp")],
)
async def test_each_allowed_type_is_stored_recorded_and_signed(
    client: Client, auth: Auth, settings: Settings, fmt: str, mime: str, ext: str
) -> None:
    data = image_bytes(fmt, size=(120, 80))
    response = await upload(client, auth("alice"), data, filename=f"holiday.{ext}", content_type=mime)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["mimeType"] == mime
    assert (body["width"], body["height"]) == (120, 80)
    assert body["size"] == len(data)
    assert body["sha256"] == hashlib.sha256(data).hexdigest()
    assert body["name"] == f"holiday.{ext}"
    assert body["threadId"] == THREAD
    assert body["bucket"] == "iris"
    assert re.fullmatch(rf"agent-inputs/alice/{THREAD}/uploads/[0-9a-f-]{{36}}\.{ext}", body["path"])
    assert body["url"].split("?")[0].endswith(f"/storage/v1/object/sign/iris/{body['path']}")
    assert body["parts"]["agui"] == {
        "type": "image",
        "source": {"type": "url", "value": body["url"], "mimeType": mime},
        "metadata": {"filename": f"holiday.{ext}"},
    }
    assert body["parts"]["chat"] == {
        "type": "image",
        "image": body["url"],
        "mimeType": mime,
        "name": f"holiday.{ext}",
    }

    fetched = await download(client, body["url"])
    assert fetched.status_code == 200
    assert fetched.content == data
    assert fetched.headers["content-type"].startswith(mime)
    assert await count_uploads(settings) == 1


async def test_type_comes_from_the_bytes_not_the_name(client: Client, auth: Auth) -> None:
    data = image_bytes("PNG")
    response = await upload(client, auth("alice"), data, filename="photo.jpg", content_type="image/jpeg")
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["mimeType"] == "image/png"
    assert body["path"].endswith(".png")
    assert body["name"] == "photo.jpg"


@pytest.mark.parametrize(
    ("data", "found"),
    [
        (image_bytes("GIF"), "GIF"),
        (SVG, "SVG"),
        (TEXT, "text"),
        (image_bytes("BMP"), "BMP"),
        (image_bytes("TIFF"), "TIFF"),
    ],
    ids=["gif", "svg", "text", "bmp", "tiff"],
)
async def test_other_types_renamed_png_are_415(
    client: Client, auth: Auth, settings: Settings, request: pytest.FixtureRequest, data: bytes, found: str
) -> None:
    response = await upload(client, auth("alice"), data, filename="innocent.png", content_type="image/png")
    assert response.status_code == 415, response.text
    problem = response.json()
    assert problem["code"] == "unsupported_media_type"
    assert found in problem["detail"]
    assert problem["extra"] == {"found": found}
    assert await count_uploads(settings) == 0
    assert stored_objects(settings, request) == []


async def test_truncated_png_is_422(client: Client, auth: Auth, settings: Settings) -> None:
    data = noise_png(50_000)
    response = await upload(client, auth("alice"), data[: len(data) // 2])
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "image_undecodable"
    assert await count_uploads(settings) == 0


async def test_png_whose_profile_inflates_past_the_limit_is_422(
    client: Client, auth: Auth, settings: Settings
) -> None:
    response = await upload(client, auth("alice"), png_with_huge_icc_profile())
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "image_undecodable"
    assert await count_uploads(settings) == 0


async def test_decompression_bomb_is_422(client: Client, auth: Auth, settings: Settings) -> None:
    bomb = png_bomb(20000, 20000)
    assert len(bomb) < 100_000  # tiny on the wire, 400 megapixels once decoded
    response = await upload(client, auth("alice"), bomb)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "image_too_large"
    assert await count_uploads(settings) == 0


async def test_one_byte_over_the_limit_is_413_and_leaves_nothing(
    client: Client, auth: Auth, settings: Settings, request: pytest.FixtureRequest
) -> None:
    limit = settings.max_image_bytes
    png = noise_png(limit - 100_000)
    data = png + b"\x00" * (limit + 1 - len(png))
    assert len(data) == limit + 1
    response = await upload(client, auth("alice"), data)
    assert response.status_code == 413, response.text
    assert response.json()["code"] == "file_too_large"
    assert await count_uploads(settings) == 0
    assert stored_objects(settings, request) == []

    exactly = png + b"\x00" * (limit - len(png))  # trailing bytes after IEND are ignored by decoders
    accepted = await upload(client, auth("alice"), exactly)
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["size"] == limit


async def test_declared_length_over_the_limit_is_refused_up_front(client: Client, auth: Auth) -> None:
    response = await client.post(
        "/api/files",
        content=b"x" * 10,
        headers={
            **auth("alice"),
            "content-type": "multipart/form-data; boundary=abc",
            "content-length": str(50 * 1024 * 1024),
        },
    )
    assert response.status_code == 413
    assert response.json()["code"] == "file_too_large"


async def test_thread_ids_are_scoped_to_their_owner(client: Client, auth: Auth, settings: Settings) -> None:
    """Bob's thread id names another thread for alice (no squatting, no probing); a thread its owner
    deleted takes no more uploads."""
    bobs = await upload(client, auth("bob"), image_bytes("PNG"))
    alices = await upload(client, auth("alice"), image_bytes("PNG"))  # same THREAD
    assert (bobs.status_code, alices.status_code) == (201, 201)
    assert bobs.json()["path"].startswith(f"agent-inputs/bob/{THREAD}/uploads/")
    assert alices.json()["path"].startswith(f"agent-inputs/alice/{THREAD}/uploads/")

    engine = create_engine(settings.effective_database_url)
    try:
        async with AsyncSession(engine) as db:
            agent = await AgentRepository(session=db).get_by_slug("default")
            assert agent is not None
            repo = SessionRepository(session=db)
            session = repo.create_for_owner("bobs-thread", "bob", agent.id, None)
            await repo.soft_delete(session)
            await db.commit()
    finally:
        await engine.dispose()
    denied = await upload(client, auth("bob"), image_bytes("PNG"), thread="bobs-thread")
    assert denied.status_code == 404
    assert denied.json()["code"] == "thread_not_found"
    allowed = await upload(client, auth("alice"), image_bytes("PNG"), thread="bobs-thread")
    assert allowed.status_code == 201


@pytest.mark.parametrize(
    ("thread", "segment"),
    [
        ("thread_abc123", "thread_abc123"),
        ("76DFC56F-4A3B-4C2D-9E1F-0123456789AB", "b32."),
        ("T" * 128, "b32."),
        ("..", "b32."),
    ],
    ids=["plain", "upper-uuid", "128-chars", "dot-dot"],
)
async def test_opaque_thread_ids_are_echoed_and_stored_safely(
    client: Client, auth: Auth, thread: str, segment: str
) -> None:
    response = await upload(client, auth("alice"), image_bytes("PNG"), thread=thread)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["threadId"] == thread
    owner, seg, uploads, _name = body["path"].split("/")[1:]
    assert (owner, uploads) == ("alice", "uploads")
    assert seg.startswith(segment)
    assert seg == seg.lower()
    assert (await download(client, body["url"])).status_code == 200


async def test_alias_path(client: Client, auth: Auth) -> None:
    response = await upload(client, auth("alice"), image_bytes("WEBP"), path="/api/file/upload")
    assert response.status_code == 201, response.text
    assert response.json()["mimeType"] == "image/webp"


@pytest.mark.parametrize(
    ("kwargs", "status", "code", "field"),
    [
        ({"thread": None}, 422, "validation_failed", "threadId"),
        ({"thread": "a/b"}, 422, "invalid_thread_id", "threadId"),
        ({"thread": "x" * 129}, 422, "invalid_thread_id", "threadId"),
        ({"data": b""}, 422, "file_missing", "file"),
    ],
    ids=["no-thread", "slash-thread", "129-char-thread", "empty-file"],
)
async def test_form_errors(
    client: Client, auth: Auth, kwargs: dict[str, Any], status: int, code: str, field: str
) -> None:
    args: dict[str, Any] = {"data": image_bytes("PNG"), **kwargs}
    data = args.pop("data")
    response = await upload(client, auth("alice"), data, **args)
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
    assert response.json()["field"] == field


async def test_request_shape_errors(client: Client, auth: Auth) -> None:
    headers = auth("alice")
    no_file = await client.post(
        "/api/files", data={"threadId": THREAD}, files={"other": ("a.txt", b"x")}, headers=headers
    )
    assert no_file.status_code == 422
    assert no_file.json()["code"] == "unexpected_file"

    json_body = await client.post("/api/files", json={"threadId": THREAD}, headers=headers)
    assert json_body.status_code == 415
    assert json_body.json()["code"] == "multipart_required"

    two = await client.post(
        "/api/files",
        files=[
            ("file", ("a.png", image_bytes("PNG"), "image/png")),
            ("file", ("b.png", image_bytes("PNG"), "image/png")),
        ],
        data={"threadId": THREAD},
        headers=headers,
    )
    assert two.status_code == 422
    assert two.json()["code"] == "too_many_files"

    garbage = await client.post(
        "/api/files",
        content=b'--abc\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nxx--zzz',
        headers={**headers, "content-type": "multipart/form-data; boundary=abc"},
    )
    assert garbage.status_code in {400, 422}
    assert garbage.headers["content-type"] == "application/problem+json"

    anonymous = await upload(client, {}, image_bytes("PNG"))
    assert anonymous.status_code == 401


async def test_file_name_is_cleaned(client: Client, auth: Auth) -> None:
    response = await upload(client, auth("alice"), image_bytes("PNG"), filename="..\\..\\evil/../cat.png")
    assert response.status_code == 201, response.text
    assert response.json()["name"] == "cat.png"

    raw = (
        b'--b0undary\r\nContent-Disposition: form-data; name="threadId"\r\n\r\n'
        + THREAD.encode()
        + b'\r\n--b0undary\r\nContent-Disposition: form-data; name="file"; filename="do\x07g.png"\r\n'
        + b"Content-Type: image/png\r\n\r\n"
        + image_bytes("PNG")
        + b"\r\n--b0undary--\r\n"
    )
    headers = {**auth("alice"), "content-type": "multipart/form-data; boundary=b0undary"}
    control = await client.post("/api/files", content=raw, headers=headers)
    assert control.status_code == 201, control.text
    assert control.json()["name"] == "dog.png"


async def test_local_signed_url_rules(client: Client, auth: Auth, settings: Settings, tmp_path: Path) -> None:
    if settings.storage == "supabase":
        pytest.skip("Supabase serves its own signed URLs; local and S3 objects are served by Iris")
    body = (await upload(client, auth("alice"), image_bytes("PNG"))).json()
    signed = urlsplit(body["url"])
    path, token = signed.path, signed.query.removeprefix("token=")

    ok = await client.get(f"{path}?token={token}")
    assert ok.status_code == 200
    assert ok.headers["x-content-type-options"] == "nosniff"
    assert ok.headers["cache-control"].startswith("private")
    assert ok.headers["content-type"] == "image/png"

    secret = derive_storage_secret(settings.jwt_secret or "")
    object_path = body["path"]
    expired = sign_object_token(secret, "iris", object_path, utcnow().replace(year=2020))
    other = sign_object_token(
        secret, "iris", object_path.replace("uploads/", "uploads/0"), utcnow().replace(year=2099)
    )
    forged = sign_object_token("x" * 40, "iris", object_path, utcnow().replace(year=2099))
    cases = [
        (f"{path}", 400, "token_missing"),
        (f"{path}?token=garbage", 400, "token_malformed"),
        (f"{path}?token={expired}", 403, "token_expired"),
        (f"{path}?token={other}", 403, "token_path_mismatch"),
        (f"{path}?token={forged}", 403, "token_invalid"),
        (f"{path.replace('/iris/', '/other/')}?token={token}", 403, "token_path_mismatch"),
        (f"/storage/v1/object/sign/iris/agent-inputs/../../../etc/passwd?token={token}", 403, None),
    ]
    for url, status, code in cases:
        response = await client.get(url)
        assert response.status_code in ({status} if code else {status, 404}), (url, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        if code:
            assert response.json()["code"] == code
