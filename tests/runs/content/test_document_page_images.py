"""Scanned pages for a model without native PDF reading, on the Ollama loopback fake: a vision model gets
the document's text with its pages without text rendered as page images (natively, in the message's
``images``), recorded as ``iris/documentFallback`` ``text+images`` and shown in history; a text model
keeps the labelled "no text" line; the model's image count bounds how many pages go as images; pages are
rendered once and kept, and later turns send the kept bytes. The document's text is never glued onto
the user's words: Ollama takes one string per message, so each part is a paragraph of its own."""

from __future__ import annotations

import base64
import io
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from ollama import Image as OllamaImage
from ollama import Message as OllamaMessage
from PIL import Image

from iris.app.asgi import create_app
from iris.app.media import documents
from iris.app.media.page_images import page_image_path
from iris.app.runs.content.attachments import PAGE_IMAGE_EDGE_PX
from iris.app.settings import Settings
from iris.app.storage.factory import create_storage
from tests.support.agents import offer
from tests.support.documents import IMAGE_CONTENT, build_pdf, text_content
from tests.support.fake_ollama import FakeOllama
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import run, run_input, upload, user_message

Client = AsyncTestClient[Litestar]
SCANNED = build_pdf([text_content(["Typed cover page"]), IMAGE_CONTENT, IMAGE_CONTENT])
"""Page 1 has text; pages 2 and 3 are pictures only (what a scan looks like to a reader)."""


@pytest.fixture
def ollama() -> FakeOllama:
    return FakeOllama(model="llava")


@pytest.fixture
async def client(
    settings: Settings, ollama: FakeOllama, auth: Callable[..., dict[str, str]]
) -> AsyncIterator[Client]:
    """Iris with an Ollama vision model and an Ollama text model (neither reads PDFs natively)."""
    with serve_asgi(ollama.app) as base:
        async with AsyncTestClient(app=create_app(settings, environ={})) as test_client:
            admin = auth("root", role="admin")
            for model_id, kind in (("llava", "vision"), ("llama3.2", "text")):
                body = {
                    "name": model_id,
                    "provider": "ollama",
                    "modelId": model_id,
                    "type": kind,
                    "options": {"baseUrl": base},
                }
                created = await test_client.post("/api/models", json=body, headers=admin)
                assert created.status_code == 201, created.text
                await offer(test_client, admin, f"ollama/{model_id}")
            yield test_client


def sent_user_message(ollama: FakeOllama) -> dict[str, Any]:
    """The last request's user message, validated against the ``ollama`` client's types."""
    body = ollama.requests[-1].json
    for message in body["messages"]:  # the client's Image wraps the base64 text it sends
        images = [OllamaImage(value=data) for data in message.get("images", [])]
        OllamaMessage.model_validate({**message, **({"images": images} if images else {})})
    user: dict[str, Any] = body["messages"][-1]
    assert user["role"] == "user"
    return user


async def test_a_vision_model_gets_pages_without_text_as_rendered_images(
    client: Client, ollama: FakeOllama, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    pdf = await upload(client, alice, thread, data=SCANNED, name="scan.pdf")
    ollama.text("A cover and two scanned pages.")

    await run(
        client, alice, run_input(thread, user_message("Read it.", pdf["parts"]["agui"]), model="ollama/llava")
    )

    user = sent_user_message(ollama)
    assert "[page 1]\nTyped cover page" in user["content"]
    assert "[page 2: no text; sent as an image after this text]" in user["content"]
    assert "[page 3: no text; sent as an image after this text]" in user["content"]
    assert len(user["images"]) == 2
    for data in user["images"]:
        with Image.open(io.BytesIO(base64.b64decode(data))) as page:
            assert page.format == "PNG"
            assert max(page.size) == PAGE_IMAGE_EDGE_PX
            assert page.size[0] < page.size[1]  # a portrait letter page
    (row, _) = await stored.messages(thread)
    document = next(p for p in row.parts or () if p["type"] == "document")
    assert document["iris/documentFallback"] == {"sent": "text+images", "pages": 3, "imagePages": [2, 3]}
    history = await client.get(f"/agent/threads/{thread}/messages?format=ag-ui", headers=alice)
    assert history.status_code == 200, history.text
    (shown,) = [
        p
        for m in history.json()["messages"]
        if m["role"] == "user"
        for p in m["content"]
        if p["type"] == "document"
    ]
    assert shown["metadata"]["iris/documentFallback"]["imagePages"] == [2, 3]


@pytest.mark.parametrize("model", ["ollama/llava", "ollama/llama3.2"])
async def test_the_document_text_is_a_paragraph_of_its_own(
    client: Client, ollama: FakeOllama, alice: dict[str, str], model: str
) -> None:
    thread = str(uuid.uuid4())
    pdf = await upload(
        client, alice, thread, data=build_pdf([text_content(["Revenue rose."])]), name="report.pdf"
    )
    ollama.text("Revenue rose.")

    words = user_message("Summarise this document.", pdf["parts"]["agui"])
    await run(client, alice, run_input(thread, words, model=model))

    content = sent_user_message(ollama)["content"]
    assert content.startswith('Summarise this document.\n\n[document "report.pdf", 1 page, sent as its text]')
    assert "Revenue rose." in content


async def test_a_text_model_keeps_the_no_text_line(
    client: Client, ollama: FakeOllama, alice: dict[str, str], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    pdf = await upload(client, alice, thread, data=SCANNED, name="scan.pdf")
    ollama.text("A cover page.")

    await run(
        client,
        alice,
        run_input(thread, user_message("Read it.", pdf["parts"]["agui"]), model="ollama/llama3.2"),
    )

    user = sent_user_message(ollama)
    assert "[page 2: no text (an image or scan)]" in user["content"]
    assert "images" not in user or user["images"] == []
    (row, _) = await stored.messages(thread)
    document = next(p for p in row.parts or () if p["type"] == "document")
    assert document["iris/documentFallback"] == {"sent": "text", "pages": 3}


async def test_the_model_image_count_bounds_the_rendered_pages(
    client: Client, ollama: FakeOllama, alice: dict[str, str], stored: Stored
) -> None:
    """The catalogue row takes 4 images a request (its ``maxImages``): beside a message's 2 images, 2
    of a scan's 6 pages go as images, the first two; the others keep the "no text" line."""
    thread = str(uuid.uuid4())
    pdf = await upload(client, alice, thread, data=build_pdf([IMAGE_CONTENT] * 6), name="six.pdf")
    images = [(await upload(client, alice, thread, name=f"{n}.png"))["parts"]["agui"] for n in range(2)]
    ollama.text("ok")

    body = run_input(thread, user_message("Read it.", *images, pdf["parts"]["agui"]), model="ollama/llava")
    await run(client, alice, body)

    user = sent_user_message(ollama)
    assert len(user["images"]) == 4
    assert "[page 2: no text; sent as an image after this text]" in user["content"]
    assert "[page 3: no text (an image or scan)]" in user["content"]
    (row, _) = await stored.messages(thread)
    document = next(p for p in row.parts or () if p["type"] == "document")
    assert document["iris/documentFallback"]["imagePages"] == [1, 2]


async def test_earlier_images_of_the_thread_count_against_the_rendered_pages(
    client: Client, ollama: FakeOllama, alice: dict[str, str], stored: Stored
) -> None:
    """The request carries the thread's 3 earlier images: one page of a scan sent next fits beside them."""
    thread = str(uuid.uuid4())
    images = [
        (await upload(client, alice, thread, data=image_bytes("PNG", (40 + n, 30)), name=f"{n}.png"))[
            "parts"
        ]["agui"]
        for n in range(3)
    ]
    ollama.text("Three squares.")
    await run(client, alice, run_input(thread, user_message("Look.", *images), model="ollama/llava"))
    pdf = await upload(client, alice, thread, data=build_pdf([IMAGE_CONTENT] * 3), name="three.pdf")
    ollama.text("ok")

    body = run_input(thread, user_message("And this?", pdf["parts"]["agui"]), model="ollama/llava")
    await run(client, alice, body)

    sent = [m for m in ollama.requests[-1].json["messages"] if m["role"] == "user"]
    assert [len(m.get("images") or []) for m in sent] == [3, 1]
    assert "[page 1: no text; sent as an image after this text]" in sent[-1]["content"]
    assert "[page 2: no text (an image or scan)]" in sent[-1]["content"]
    (*_, row, _) = await stored.messages(thread)
    document = next(p for p in row.parts or () if p["type"] == "document")
    assert document["iris/documentFallback"]["imagePages"] == [1]


async def test_rendered_pages_are_kept_and_a_later_turn_in_another_process_does_not_render_again(
    client: Client,
    ollama: FakeOllama,
    alice: dict[str, str],
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Turn 1 renders the scan's pages once and keeps them under ``derived/documents/``; turn 2, served by a
    second app on the same database and storage (another process, as far as Iris can tell), starts no
    PDF worker and sends the very same bytes."""
    renders: list[Sequence[int]] = []
    real = documents.render_pdf_pages

    async def counted(data: bytes, pages: Sequence[int], **bounds: Any) -> list[bytes]:
        renders.append(tuple(pages))
        return await real(data, pages, **bounds)

    monkeypatch.setattr(documents, "render_pdf_pages", counted)
    thread = str(uuid.uuid4())
    pdf = await upload(client, alice, thread, data=SCANNED, name="scan.pdf")
    ollama.text("A cover and two scans.")
    await run(
        client, alice, run_input(thread, user_message("Read it.", pdf["parts"]["agui"]), model="ollama/llava")
    )
    first = sent_user_message(ollama)["images"]
    assert renders == [(1, 2)]  # pages 2 and 3, 0-based, in one worker job
    storage = create_storage(settings)
    kept = [await storage.read(page_image_path(pdf["path"], n, PAGE_IMAGE_EDGE_PX)) for n in (2, 3)]
    assert [base64.b64encode(png).decode() for png in kept] == first

    ollama.text("Still two scans.")
    async with AsyncTestClient(app=create_app(settings, environ={})) as other:
        await run(other, alice, run_input(thread, user_message("Once more?"), model="ollama/llava"))

    assert renders == [(1, 2)]  # not rendered again
    earlier = next(m for m in ollama.requests[-1].json["messages"] if m["role"] == "user")
    assert earlier["images"] == first
