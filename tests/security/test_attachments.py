"""The URL policy and re-signing against real uploads, on both storage backends and both databases."""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.persistence.db import create_engine
from iris.app.persistence.repositories import UploadRepository, utcnow
from iris.app.security.url_policy import AttachmentUrlRejected, UrlPolicy, resolve_attachment_url
from iris.app.settings import Settings, prepare
from iris.app.storage.factory import create_storage
from iris.app.storage.signing import sign_image_parts
from iris.app.storage.tokens import sign_object_token
from tests.support.fake_supabase import FakeSupabase
from tests.support.images import image_bytes
from tests.support.uploads import download, upload

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]


@pytest.fixture(params=["local", "supabase", "s3"])
def storage_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


async def test_uploaded_url_resolves_to_its_record(client: Client, auth: Auth, settings: Settings) -> None:
    thread = "Thread:Attachments.1"
    body = (await upload(client, auth("alice"), image_bytes("JPEG"), thread=thread)).json()
    policy = UrlPolicy.from_settings(prepare(settings))
    engine = create_engine(settings.effective_database_url)
    try:
        async with AsyncSession(engine) as db:
            uploads = UploadRepository(session=db)
            record = await resolve_attachment_url(
                body["url"], user_id="alice", thread_id=thread, policy=policy, uploads=uploads
            )
            assert str(record.id) == body["id"]
            assert record.sha256 == body["sha256"]

            with pytest.raises(AttachmentUrlRejected) as other_user:
                await resolve_attachment_url(
                    body["url"], user_id="bob", thread_id=thread, policy=policy, uploads=uploads
                )
            assert other_user.value.rule == "owner"

            # A correctly signed URL for an object nobody recorded is still refused.
            ghost = body["path"].rsplit("/", 1)[0] + f"/{uuid.uuid4()}.png"
            assert policy.token_secret is not None
            token = sign_object_token(policy.token_secret, "iris", ghost, utcnow() + dt.timedelta(minutes=5))
            ghost_url = f"{policy.scheme}://{policy.host}:{policy.port}/storage/v1/object/sign/iris/{ghost}?token={token}"
            with pytest.raises(AttachmentUrlRejected) as unknown:
                await resolve_attachment_url(
                    ghost_url, user_id="alice", thread_id=thread, policy=policy, uploads=uploads
                )
            assert unknown.value.rule == "upload_unknown"
    finally:
        await engine.dispose()


async def test_resigning_many_parts_is_one_batch(
    client: Client, auth: Auth, settings: Settings, request: pytest.FixtureRequest
) -> None:
    thread = str(uuid.uuid4())
    bodies = [
        (await upload(client, auth("alice"), image_bytes("PNG", color=(i * 40, 0, 0)), thread=thread)).json()
        for i in range(5)
    ]
    parts: list[dict[str, Any]] = [{"type": "text", "text": "hello"}]
    for body in bodies * 3:  # a long history repeats images
        parts.append(
            {"type": "image", "bucket": body["bucket"], "path": body["path"], "mimeType": body["mimeType"]}
        )

    storage = create_storage(prepare(settings))
    fake: FakeSupabase | None = (
        request.getfixturevalue("fake_supabase")[0] if settings.storage == "supabase" else None
    )
    before = len(fake.requests) if fake else 0
    try:
        signed = await sign_image_parts(storage, parts, ttl_seconds=120)
        if fake is not None:
            assert len(fake.requests) - before == 1  # one batch call, not one per image
        assert await sign_image_parts(storage, [{"type": "text", "text": "no images"}], ttl_seconds=60) == {}
    finally:
        await storage.aclose()
    assert set(signed) == {b["path"] for b in bodies}
    now = utcnow()
    for body in bodies:
        fresh = signed[body["path"]]
        assert dt.timedelta(seconds=110) < fresh.expires_at - now <= dt.timedelta(seconds=121)
        fetched = await download(client, fresh.url)
        assert fetched.status_code == 200
        assert fetched.headers["content-type"].startswith("image/png")
        assert hashlib.sha256(fetched.content).hexdigest() == body["sha256"]
