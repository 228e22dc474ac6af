"""Documents and audio sent inline on ``/agent/runs`` (an AG-UI ``data`` source, a legacy ``binary``
part with ``data``): checked as an upload is, stored as an upload of the run's thread, replayed from
history with fresh signed URLs, re-sent to the vendor on later turns; hostile data is a clear 4xx with
nothing stored. Real PDFs, WAV and MP3 made by tests/support/documents.py; both engines."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from pydantic import TypeAdapter

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.documents import build_pdf, many_pages_pdf, mp3_bytes, text_content, text_pdf, wav_bytes
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, run, run_input, user_message

Client = AsyncTestClient[Litestar]
PDF = text_pdf(["Quarterly report\nRevenue rose.", "Costs fell."])
WAV = wav_bytes(2.0)
MAX_DOCUMENT_BYTES = 64 * 1024
OPENAI_KEY = "sk-test-inline"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Small limits, so over-size and over-long data are cheap to send."""
    return msgspec.structs.replace(
        settings,
        max_document_bytes=MAX_DOCUMENT_BYTES,
        max_document_pages=5,
        max_audio_bytes=64 * 1024,
        max_audio_seconds=3.0,
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def document(data: bytes = PDF, name: str = "report.pdf", mime: str = "application/pdf") -> dict[str, Any]:
    return {
        "type": "document",
        "source": {"type": "data", "value": b64(data), "mimeType": mime},
        "metadata": {"filename": name},
    }


def audio(data: bytes = WAV, name: str = "note.wav", mime: str = "audio/wav") -> dict[str, Any]:
    return {
        "type": "audio",
        "source": {"type": "data", "value": b64(data), "mimeType": mime},
        "metadata": {"filename": name},
    }


def stored_objects(settings: Settings) -> list[Path]:
    """Every object local storage holds: uploads and what was derived from them."""
    root = Path(settings.data_dir)
    return [p for p in root.rglob("*") if p.is_file() and {"agent-inputs", "derived"} & set(p.parts)]


async def test_a_pdf_and_a_wav_as_data_are_read_and_kept_as_uploads_of_the_new_thread(
    client: Client, alice: dict[str, str], stored: Stored, settings: Settings
) -> None:
    thread = str(uuid.uuid4())
    body = run_input(thread, user_message("What are these?", document(), audio()), model="local/multimodal")

    answer = answer_text(await run(client, alice, body))

    assert 'Document 1 (report.pdf): PDF, 2 pages, first line: "Quarterly report".' in answer
    assert "Audio 1 (note.wav): WAV, 2.00 seconds" in answer
    pdf_row, wav_row = await stored.uploads(thread)
    assert (pdf_row.owner_id, pdf_row.mime_type, pdf_row.name, pdf_row.pages) == (
        "alice",
        "application/pdf",
        "report.pdf",
        2,
    )
    assert (wav_row.mime_type, wav_row.size, wav_row.duration_seconds) == ("audio/wav", len(WAV), 2.0)
    assert pdf_row.text_path is not None
    assert pdf_row.thumbnail_path is not None
    assert len(stored_objects(settings)) == 4  # the PDF, its page texts and thumbnail, the WAV

    for _ in range(2):  # every read signs afresh
        response = await client.get(f"/agent/threads/{thread}/messages?format=ag-ui", headers=alice)
        assert response.status_code == 200, response.text
        _, doc, clip = response.json()["messages"][0]["content"]
        assert doc["source"]["type"] == "url"
        assert doc["metadata"]["filename"] == "report.pdf"
        assert doc["metadata"]["pages"] == 2
        assert (await client.get(doc["source"]["value"])).content == PDF
        assert (await client.get(doc["metadata"]["thumbnailUrl"])).headers["content-type"] == "image/png"
        assert clip["metadata"]["durationSeconds"] == 2.0
        assert (await client.get(clip["source"]["value"])).content == WAV

    # The URL history gave is an upload of this thread like any other: a later turn may cite it.
    again = run_input(
        thread,
        user_message("And this one?", {**doc, "source": {**doc["source"]}}),
        model="local/multimodal",
    )
    assert "Document 1 (report.pdf)" in answer_text(await run(client, alice, again))


async def test_the_legacy_binary_part_takes_data_for_pdf_and_mp3(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    clip = mp3_bytes(40)
    parts = [
        {"type": "binary", "mimeType": "application/pdf", "data": b64(PDF), "filename": "r.pdf"},
        {"type": "binary", "mimeType": "audio/mpeg", "data": b64(clip), "filename": "memo.mp3"},
    ]
    answer = answer_text(
        await run(client, alice, run_input(thread, user_message("Read.", *parts), model="local/multimodal"))
    )
    assert "Document 1 (r.pdf): PDF, 2 pages" in answer
    assert "Audio 1 (memo.mp3): MP3" in answer
    assert [u.mime_type for u in await stored.uploads(thread)] == ["application/pdf", "audio/mpeg"]


async def test_an_existing_thread_keeps_data_parts_of_its_second_turn(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    first = user_message("Hello.")
    await run(client, alice, run_input(thread, first, model="local/multimodal"))
    second = run_input(thread, first, user_message("Now this.", document()), model="local/multimodal")

    assert "Document 1 (report.pdf)" in answer_text(await run(client, alice, second))
    (row,) = await stored.uploads(thread)
    assert row.mime_type == "application/pdf"
    user_rows = [m for m in await stored.messages(thread) if m.role == "user"]
    assert [p["uploadId"] for p in user_rows[1].parts or () if p["type"] == "document"] == [str(row.id)]


POLYGLOT = WAV[:100] + b"%PDF-1.7" + WAV[108:]
"""A WAV that PDF readers would also open (``%PDF-`` in its first KiB)."""

HOSTILE: list[tuple[str, Callable[[], dict[str, Any]], int, str, str]] = [
    ("a polyglot", lambda: audio(POLYGLOT), 415, "unsupported_media_type", "content[1].source.value"),
    (
        "not base64",
        lambda: {**document(), "source": {"type": "data", "value": "%%%", "mimeType": "application/pdf"}},
        422,
        "invalid_base64",
        "content[1].source.value",
    ),
    (
        "over the document limit, refused by its length",
        lambda: {
            **document(),
            "source": {
                "type": "data",
                "value": "A" * (MAX_DOCUMENT_BYTES * 4 // 3 + 64),
                "mimeType": "application/pdf",
            },
        },
        413,
        "file_too_large",
        "content[1].source.value",
    ),
    (
        "a WAV that says it is a PDF",
        lambda: document(WAV, "x.pdf"),
        422,
        "unsupported_media_type",
        "content[1].source.value",
    ),
    (
        "an MP3 that says it is a WAV",
        lambda: audio(mp3_bytes(20), "x.wav"),
        422,
        "unsupported_media_type",
        "content[1].source.value",
    ),
    (
        "a document part declaring audio",
        lambda: document(WAV, "x.wav", mime="audio/wav"),
        422,
        "unsupported_media_type",
        "content[1].source.mimeType",
    ),
    (
        "a data source without its mimeType",
        lambda: {"type": "audio", "source": {"type": "data", "value": b64(WAV)}},
        422,
        "validation_failed",
        "content[1].source.mimeType",
    ),
    (
        "an encrypted PDF",
        lambda: document(build_pdf([text_content(["secret"])], user_password="pw")),
        422,
        "document_encrypted",
        "content[1].source.value",
    ),
    (
        "too many pages",
        lambda: document(many_pages_pdf(6)),
        422,
        "document_too_many_pages",
        "content[1].source.value",
    ),
    (
        "a truncated PDF",
        lambda: document(PDF[: len(PDF) // 3]),
        422,
        "document_undecodable",
        "content[1].source.value",
    ),
    (
        "a WAV at 2 GHz that plays for 0.0 s",
        lambda: audio(wav_bytes(1e-6, rate=2 * 10**9)),
        422,
        "audio_out_of_range",
        "content[1].source.value",
    ),
    ("a WAV of 0 s", lambda: audio(wav_bytes(0)), 422, "audio_out_of_range", "content[1].source.value"),
    (
        "audio over the seconds limit",
        lambda: audio(wav_bytes(3.5)),
        422,
        "audio_too_long",
        "content[1].source.value",
    ),
    (
        "a legacy binary image with data",
        lambda: {"type": "binary", "mimeType": "image/png", "data": "iVBORw0K"},
        422,
        "inline_data_unsupported",
        "content[1].data",
    ),
    (
        "an image data source",
        lambda: {"type": "image", "source": {"type": "data", "value": "iVBORw0K", "mimeType": "image/png"}},
        422,
        "inline_data_unsupported",
        "content[1].source",
    ),
]


@pytest.mark.parametrize(("case", "part", "status", "code", "field"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_hostile_data_is_a_clear_4xx_and_nothing_is_stored(
    client: Client,
    alice: dict[str, str],
    stored: Stored,
    settings: Settings,
    case: str,
    part: Callable[[], dict[str, Any]],
    status: int,
    code: str,
    field: str,
) -> None:
    thread = str(uuid.uuid4())
    body = run_input(thread, user_message("Read.", part()), model="local/multimodal")

    response = await client.post("/agent/runs", json=body, headers=alice)

    assert response.status_code == status, response.text
    problem = response.json()
    assert (problem["code"], problem["field"]) == (code, f"messages[0].{field}"), case
    assert await stored.uploads(thread) == []
    assert await stored.messages(thread) == []
    assert stored_objects(settings) == []


async def test_audio_data_the_model_cannot_hear_is_refused_before_it_is_stored(
    client: Client, alice: dict[str, str], stored: Stored, settings: Settings
) -> None:
    thread = str(uuid.uuid4())
    body = run_input(thread, user_message("Listen.", audio()), model="local/vision")

    response = await client.post("/agent/runs", json=body, headers=alice)

    assert response.status_code == 422, response.text
    assert response.json()["code"] == "unsupported_part"
    assert "note.wav" in response.json()["detail"]
    assert await stored.uploads(thread) == []
    assert stored_objects(settings) == []


async def test_too_many_documents_are_refused_before_any_is_decoded(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    bad = {**document(), "source": {"type": "data", "value": "%%%", "mimeType": "application/pdf"}}
    body = run_input(thread, user_message("Read.", *[bad] * 6), model="local/multimodal")

    response = await client.post("/agent/runs", json=body, headers=alice)

    assert response.status_code == 422, response.text
    assert response.json()["code"] == "too_many_document"  # the count, not the bad base64
    assert await stored.uploads(thread) == []


async def test_the_upload_quota_counts_inline_files(
    settings: Settings, alice: dict[str, str], stored: Stored
) -> None:
    quota = msgspec.structs.replace(settings, quota_user_upload_bytes_per_day=len(WAV) + len(WAV) // 2)
    async with AsyncTestClient(app=create_app(quota, environ={})) as client:
        thread = str(uuid.uuid4())
        first = user_message("One.", audio())
        await run(client, alice, run_input(thread, first, model="local/multimodal"))
        second = run_input(thread, first, user_message("Two.", audio()), model="local/multimodal")

        response = await client.post("/agent/runs", json=second, headers=alice)

    assert response.status_code == 429, response.text
    problem = response.json()
    assert (problem["code"], problem["extra"]["limit"]) == ("quota_exceeded", "upload_bytes_per_day")
    assert len(await stored.uploads(thread)) == 1
    assert len([m for m in await stored.messages(thread) if m.role == "user"]) == 1
    assert len(stored_objects(settings)) == 1


@pytest.mark.usefixtures("doomed_commits")
async def test_a_run_whose_intake_does_not_commit_leaves_no_inline_file_behind(
    client: Client, alice: dict[str, str], stored: Stored, settings: Settings
) -> None:
    """The inline files were stored (the run was accepted) and the model was asked; the commit of the
    run, its messages and the upload rows failed: the objects go too."""
    thread = str(uuid.uuid4())
    body = run_input(
        thread,
        user_message("Read.", document(), audio()),
        model="local/multimodal",
        run_id=f"doomed-{uuid.uuid4()}",
    )

    events = await run(client, alice, body)

    assert [e["code"] for e in of_type(events, "RUN_ERROR")] == ["run_not_stored"]
    assert await stored.uploads(thread) == []
    assert await stored.messages(thread) == []
    assert stored_objects(settings) == []


@pytest.fixture
def openai() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key=OPENAI_KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.fixture
async def vendor_client(
    settings: Settings, openai: tuple[FakeOpenAI, str], auth: Callable[..., dict[str, str]]
) -> AsyncIterator[Client]:
    """Iris with an OpenAI model that reads PDFs and hears audio, on the loopback fake."""
    async with AsyncTestClient(app=create_app(settings, environ={"OPENAI_API_KEY": OPENAI_KEY})) as client:
        admin = auth("root", role="admin")
        model = {
            "name": "GPT audio",
            "provider": "openai",
            "modelId": "gpt-4o-audio-preview",
            "type": "multimodal",
            "options": {"baseUrl": openai[1] + "/v1"},
        }
        created = await client.post("/api/models", json=model, headers=admin)
        assert created.status_code == 201, created.text
        await offer(client, admin, "openai/gpt-4o-audio-preview")
        yield client


async def test_openai_gets_the_data_pdf_and_wav_natively_and_again_on_the_next_turn(
    vendor_client: Client, openai: tuple[FakeOpenAI, str], alice: dict[str, str]
) -> None:
    fake, _ = openai
    fake.text("A report and a note.")
    fake.text("Still the same.")
    thread = str(uuid.uuid4())
    first = user_message("What are these?", document(), audio())
    model = "openai/gpt-4o-audio-preview"

    assert answer_text(await run(vendor_client, alice, run_input(thread, first, model=model))) == (
        "A report and a note."
    )
    await run(vendor_client, alice, run_input(thread, first, user_message("Again?"), model=model))

    expected = [
        {"type": "text", "text": "What are these?"},
        {
            "type": "file",
            "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
        },
        {"type": "input_audio", "input_audio": {"data": b64(WAV), "format": "wav"}},
    ]
    for request in fake.requests:
        TypeAdapter(CompletionCreateParamsStreaming).validate_python(request.json)
        user = next(m for m in request.json["messages"] if m["role"] == "user")
        assert user["content"] == expected
