"""POST /api/files with PDFs and audio made in the tests, on both storage backends and both databases:
what Iris learns, what it stores, and that hostile files end as a clear 4xx with nothing left behind."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import AsyncIterator, Callable
from uuid import UUID

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from PIL import Image
from PIL.PngImagePlugin import PngInfo
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.asgi import create_app
from iris.app.media.uploads import derived_paths, read_page_texts
from iris.app.persistence.db import create_engine
from iris.app.persistence.models import Upload
from iris.app.settings import Settings
from iris.app.storage.factory import create_storage
from tests.support.documents import (
    IMAGE_CONTENT,
    bomb_pdf,
    build_pdf,
    many_pages_pdf,
    mp3_bytes,
    mp3_seconds,
    text_content,
    text_pdf,
    wav_bytes,
    wav_claiming,
)
from tests.support.images import image_bytes
from tests.support.uploads import count_uploads, download, stored_objects, upload

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]


@pytest.fixture(params=["local", "supabase"])
def storage_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


async def row(settings: Settings, upload_id: str) -> Upload:
    engine = create_engine(settings.effective_database_url)
    try:
        async with AsyncSession(engine) as session:
            return (await session.scalars(select(Upload).where(Upload.id == UUID(upload_id)))).one()
    finally:
        await engine.dispose()


async def test_a_pdf_is_counted_read_thumbnailed_and_signed(
    client: Client, auth: Auth, settings: Settings
) -> None:
    data = build_pdf([text_content(["Quarterly report", "Revenue grew"]), IMAGE_CONTENT])
    response = await upload(
        client, auth("alice"), data, filename="report.pdf", content_type="application/pdf"
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["kind"], body["mimeType"], body["pages"], body["durationSeconds"]) == (
        "document",
        "application/pdf",
        2,
        None,
    )
    assert (body["width"], body["height"]) == (0, 0)
    assert body["path"].endswith(".pdf")
    assert body["parts"]["agui"] == {
        "type": "document",
        "source": {"type": "url", "value": body["url"], "mimeType": "application/pdf"},
        "metadata": {"filename": "report.pdf"},
    }
    assert body["parts"]["chat"] == {
        "type": "document",
        "document": body["url"],
        "mimeType": "application/pdf",
        "name": "report.pdf",
    }
    original = await download(client, body["url"])
    assert original.content == data
    assert original.headers["content-type"].startswith("application/pdf")
    thumbnail = await download(client, body["thumbnailUrl"])
    assert thumbnail.status_code == 200
    with Image.open(io.BytesIO(thumbnail.content)) as thumb:
        assert thumb.format == "PNG"
        assert max(thumb.size) == 256

    stored = await row(settings, body["id"])
    assert (stored.pages, stored.duration_seconds) == (2, None)
    assert (stored.thumbnail_path, stored.text_path) == derived_paths(body["path"])
    storage = create_storage(settings)
    try:
        texts = await read_page_texts(storage, stored)
    finally:
        await storage.aclose()
    assert [t.split() for t in texts] == [["Quarterly", "report", "Revenue", "grew"], []]


@pytest.mark.parametrize(
    ("data", "mime", "seconds"),
    [
        (wav_bytes(2.5), "audio/wav", 2.5),
        (mp3_bytes(383), "audio/mpeg", round(mp3_seconds(383), 3)),
        (mp3_bytes(100, xing_frames=100), "audio/mpeg", round(mp3_seconds(100), 3)),
    ],
    ids=["wav", "mp3", "mp3-xing"],
)
async def test_audio_is_timed_and_signed(
    client: Client, auth: Auth, settings: Settings, data: bytes, mime: str, seconds: float
) -> None:
    # The declared type and the name say something else: only the bytes count.
    response = await upload(client, auth("alice"), data, filename="memo.ogg", content_type="audio/ogg")
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["kind"], body["mimeType"], body["durationSeconds"]) == ("audio", mime, seconds)
    assert (body["pages"], body["thumbnailUrl"]) == (None, None)
    assert body["parts"]["chat"] == {
        "type": "audio",
        "audio": body["url"],
        "mimeType": mime,
        "name": "memo.ogg",
    }
    assert body["parts"]["agui"]["type"] == "audio"
    fetched = await download(client, body["url"])
    assert fetched.content == data
    stored = await row(settings, body["id"])
    assert stored.duration_seconds == seconds
    assert (stored.pages, stored.thumbnail_path, stored.text_path) == (None, None, None)


async def test_a_pdf_named_like_an_image_is_a_pdf(client: Client, auth: Auth) -> None:
    response = await upload(
        client, auth("alice"), text_pdf(["hi"]), filename="cat.png", content_type="image/png"
    )
    assert response.status_code == 201, response.text
    assert (response.json()["mimeType"], response.json()["pages"]) == ("application/pdf", 1)


def polyglot_png_pdf() -> bytes:
    """A PNG that carries a PDF in a text chunk near its start, where PDF readers look for one."""
    out = io.BytesIO()
    info = PngInfo()
    info.add_text("Comment", text_pdf(["hidden"]).decode("latin-1"))
    Image.new("RGB", (8, 8)).save(out, format="PNG", pnginfo=info)
    return out.getvalue()


HOSTILE = [  # made when the test runs, not when it is collected (the bomb takes a second)
    pytest.param(lambda: text_pdf(["secret"], user_password="pw"), 422, "document_encrypted", id="encrypted"),
    pytest.param(lambda: many_pages_pdf(3000), 422, "document_too_many_pages", id="3000-pages"),
    pytest.param(lambda: text_pdf(["cut"])[:80], 422, "document_undecodable", id="truncated-pdf"),
    pytest.param(lambda: bomb_pdf(2 * 1024**3), 422, "document_undecodable", id="pdf-bomb"),
    pytest.param(lambda: polyglot_png_pdf(), 415, "unsupported_media_type", id="polyglot-png-pdf"),
    pytest.param(lambda: wav_claiming(3600, 1), 422, "audio_undecodable", id="wav-claims-an-hour"),
    pytest.param(lambda: mp3_bytes(100, xing_frames=100 * 3600), 422, "audio_undecodable", id="lying-xing"),
    pytest.param(lambda: wav_bytes(601, sample_width=1), 422, "audio_too_long", id="audio-over-600-s"),
    pytest.param(lambda: wav_bytes(1)[:40], 422, "audio_undecodable", id="truncated-wav"),
    pytest.param(lambda: wav_bytes(1e-6, rate=2 * 10**9), 422, "audio_out_of_range", id="wav-at-2-GHz"),
    pytest.param(lambda: wav_bytes(0), 422, "audio_out_of_range", id="wav-of-0-s"),
]


@pytest.mark.parametrize("storage_kind", ["local"])
@pytest.mark.parametrize(("data", "status", "code"), HOSTILE)
async def test_hostile_files_are_a_clear_4xx_and_leave_nothing(
    client: Client,
    auth: Auth,
    settings: Settings,
    request: pytest.FixtureRequest,
    data: Callable[[], bytes],
    status: int,
    code: str,
) -> None:
    response = await upload(
        client, auth("alice"), data(), filename="file.bin", content_type="application/octet-stream"
    )
    assert response.status_code == status, response.text
    problem = response.json()
    assert problem["code"] == code
    assert problem["field"] == "file"
    assert problem["detail"]
    assert await count_uploads(settings) == 0
    assert stored_objects(settings, request) == []


@pytest.fixture
async def small_client(settings: Settings) -> AsyncIterator[Client]:
    tight = msgspec.structs.replace(settings, max_document_bytes=20_000, max_audio_bytes=10_000)
    async with AsyncTestClient(app=create_app(tight, environ={})) as test_client:
        yield test_client


@pytest.mark.parametrize("storage_kind", ["local"])
@pytest.mark.parametrize(
    "data",
    [build_pdf([text_content([str(uuid.uuid4()) * 20])] * 30), wav_bytes(1)],
    ids=["pdf", "wav"],
)
async def test_each_kind_has_its_own_byte_limit(
    small_client: Client, auth: Auth, settings: Settings, data: bytes
) -> None:
    response = await upload(small_client, auth("alice"), data, filename="big", content_type="application/pdf")
    assert response.status_code == 413, response.text
    assert response.json()["code"] == "file_too_large"
    assert await count_uploads(settings) == 0
    # The same limits do not bind an image under its own.
    small = await upload(small_client, auth("alice"), image_bytes("PNG", size=(300, 300)))
    assert small.status_code == 201, small.text


@pytest.mark.parametrize("storage_kind", ["local"])
async def test_page_texts_are_json_in_storage(client: Client, auth: Auth, settings: Settings) -> None:
    response = await upload(client, auth("alice"), text_pdf(["one", "two (2)"]), filename="a.pdf")
    body = response.json()
    _, text_path = derived_paths(body["path"])
    assert json.loads((settings.data_path / "storage" / "iris" / text_path).read_bytes()) == [
        "one",
        "two (2)",
    ]


@pytest.mark.parametrize("storage_kind", ["local"])
@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
async def test_capabilities_carry_the_upload_limits(settings: Settings) -> None:
    tight = msgspec.structs.replace(settings, max_document_pages=7, max_audio_seconds=30.5)
    async with AsyncTestClient(app=create_app(tight, environ={})) as test_client:
        response = await test_client.get("/agent/capabilities")
    assert response.status_code == 200
    assert response.json()["custom"]["iris/uploadLimits"] == {
        "acceptedTypes": [
            "image/png",
            "image/jpeg",
            "image/webp",
            "application/pdf",
            "audio/wav",
            "audio/mpeg",
        ],
        "maxImageBytes": settings.max_image_bytes,
        "maxImagesPerMessage": 4,
        "maxDocumentsPerMessage": 5,
        "maxAudioPerMessage": 1,
        "maxDocumentBytes": 32 * 1024 * 1024,
        "maxDocumentPages": 7,
        "maxAudioBytes": 25 * 1024 * 1024,
        "maxAudioSeconds": 30.5,
    }


@pytest.mark.parametrize("storage_kind", ["local"])
async def test_a_pdf_or_audio_upload_is_not_an_image(client: Client, auth: Auth) -> None:
    alice = auth("alice")
    thread = str(uuid.uuid4())
    for data in (text_pdf(["not a picture"]), wav_bytes(0.5)):
        body = (await upload(client, alice, data, thread=thread)).json()
        disguised = [
            {"type": "image", "source": {"type": "url", "value": body["url"], "mimeType": "image/png"}},
            {"type": "binary", "mimeType": "image/png", "id": body["id"]},
        ]
        for part in disguised:
            message = {
                "id": str(uuid.uuid4()),
                "role": "user",
                "content": [{"type": "text", "text": "hi"}, part],
            }
            run = {
                "threadId": thread,
                "runId": str(uuid.uuid4()),
                "messages": [message],
                "tools": [],
                "context": [],
            }
            response = await client.post("/agent/runs", json=run, headers=alice)
            assert response.status_code == 422, response.text
            assert response.json()["code"] == "unsupported_media_type"
