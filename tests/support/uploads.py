"""Uploads through ``POST /api/files`` and what they leave behind: the signed URL fetched as a browser
would, the ``Upload`` rows, and the objects the storage backend (local, Supabase or S3) holds."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import func, select

from iris.app.persistence.db import create_engine
from iris.app.persistence.models import Upload
from iris.app.settings import Settings
from tests.support.fake_supabase import FakeSupabase
from tests.support.s3_server import object_keys

Client = AsyncTestClient[Litestar]
THREAD = str(uuid.uuid4())
"""The thread an upload names unless it says otherwise."""


async def upload(
    client: Client,
    headers: dict[str, str],
    data: bytes,
    *,
    filename: str = "photo.png",
    content_type: str = "image/png",
    thread: str | None = THREAD,
    path: str = "/api/files",
) -> httpx.Response:
    fields = {"threadId": thread} if thread is not None else {}
    return await client.post(
        path, files={"file": (filename, data, content_type)}, data=fields, headers=headers
    )


async def download(client: Client, url: str) -> httpx.Response:
    """Fetch a signed URL the way a browser would (local URLs are served by the app under test)."""
    parts = urlsplit(url)
    if parts.path.startswith("/storage/v1/object/sign/") and parts.port == 8000:
        return await client.get(f"{parts.path}?{parts.query}")
    async with httpx.AsyncClient() as http:
        return await http.get(url)


async def count_uploads(settings: Settings) -> int:
    engine = create_engine(settings.effective_database_url)
    try:
        async with engine.connect() as conn:
            return int((await conn.execute(select(func.count()).select_from(Upload))).scalar_one())
    finally:
        await engine.dispose()


def stored_objects(settings: Settings, request: pytest.FixtureRequest) -> list[str]:
    """Every object the storage backend holds, plus any spool file left behind."""
    leftovers = [str(p) for p in (settings.data_path / "tmp").glob("*") if p.is_file()]
    if settings.storage == "supabase":
        fake: FakeSupabase = request.getfixturevalue("fake_supabase")[0]
        return [path for (_, path) in fake.objects] + leftovers
    if settings.storage == "s3":
        return object_keys(request.getfixturevalue("s3_endpoint")) + leftovers
    root = settings.data_path / "storage"
    return [str(p) for p in root.rglob("*") if p.is_file()] + leftovers
