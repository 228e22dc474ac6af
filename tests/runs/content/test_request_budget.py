"""The whole-request budget: re-encoding never grows an image, and four near-limit photos fit the
request limit a vendor declares (downscaled further), or the request is refused before the stream."""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Literal

import anyio
import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from PIL import Image, PngImagePlugin

from iris.app.media.normalise import Target, normalise
from iris.app.media.pipeline import FRAMING_BYTES, ImageDelivery, ImageRef, image_budget
from iris.app.media.variants import VariantCache
from iris.app.persistence.models import Message as MessageRow
from iris.app.runs.content.context import reserved_bytes
from iris.app.storage.local import LocalStorage
from iris.providers import (
    Capabilities,
    ImagePart,
    Message,
    ModelSpec,
    Provider,
    ProviderContext,
    RequestOptions,
    TextPart,
)
from iris.providers.anthropic import AnthropicProvider
from iris.providers.gemini import GeminiProvider
from iris.providers.local import LocalProvider
from iris.providers.ollama import OllamaProvider
from iris.providers.openai import OpenAIProvider
from tests.support.agents import offer
from tests.support.documents import text_pdf, wav_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, run, run_input, upload, user_message

Client = AsyncTestClient[Litestar]
UPLOAD_LIMIT = 5 * 1024 * 1024  # IRIS_MAX_IMAGE_BYTES: the largest photo a user can send


def photo(side: tuple[int, int], quality: int = 85) -> bytes:
    """A JPEG of incompressible pixels, saved the way cameras do (quality 85)."""
    image = Image.frombytes("RGB", side, os.urandom(side[0] * side[1] * 3))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def _caps(provider: type[Provider], model_id: str) -> Capabilities:
    async_http = httpx.AsyncClient()  # never used: capabilities() and build_request() do no I/O
    return provider(ProviderContext(environ={}, http=async_http)).capabilities(  # type: ignore[call-arg]
        ModelSpec(provider="x", model_id=model_id, type="vision")
    )


def test_each_provider_declares_its_request_limit() -> None:
    """The figures and their sources are in ADR 0018."""
    assert _caps(GeminiProvider, "gemini-2.5-flash").max_request_bytes == 20_000_000
    assert _caps(AnthropicProvider, "claude-sonnet-4-5").max_request_bytes == 32_000_000
    assert _caps(OpenAIProvider, "gpt-4o").max_request_bytes == 50_000_000
    assert _caps(OllamaProvider, "llava").max_request_bytes == 20_000_000


def test_reencoding_never_makes_a_photo_larger() -> None:
    original = photo((1600, 1200))
    target = Target(mime_types=("image/jpeg",), max_bytes=20 * 1024 * 1024)
    out = normalise(original, target)
    assert len(out.data) <= len(original)
    assert (out.width, out.height) == (1600, 1200)  # a lower quality did it, not a smaller picture


def test_reencoding_never_makes_a_palette_png_larger() -> None:
    image = Image.frombytes("RGB", (300, 200), os.urandom(300 * 200 * 3)).quantize(colors=16)
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=True)
    original = buffer.getvalue()
    out = normalise(original, Target(mime_types=("image/png",), max_bytes=20 * 1024 * 1024))
    assert len(out.data) <= len(original)
    assert (out.width, out.height) == (300, 200)


async def _stored_refs(storage: LocalStorage, photos: list[bytes]) -> list[ImageRef]:
    refs = []
    for index, data in enumerate(photos):
        ref = ImageRef(
            path=f"agent-inputs/u/t/uploads/{index}.jpg",
            mime_type="image/jpeg",
            sha256=hashlib.sha256(data).hexdigest(),
        )

        async def once(data: bytes = data) -> AsyncIterator[bytes]:
            yield data

        await storage.put(ref.path, once(), content_type="image/jpeg")
        refs.append(ref)
    return refs


@pytest.mark.parametrize(
    ("provider", "model_id"), [(GeminiProvider, "gemini-2.5-flash"), (OllamaProvider, "llava")]
)
async def test_four_near_limit_photos_fit_the_vendors_request_limit(
    tmp_path: Path, provider: type[Provider], model_id: str
) -> None:
    """Neither vendor has a downscale target, so the four photos went out as they were: a 28 MB body
    against a 20 MB limit. With the budget the body fits, and each image is still as large as it can be."""
    photos = [photo((2880, 2160)) for _ in range(4)]
    assert all(4_500_000 < len(p) <= UPLOAD_LIMIT for p in photos)
    storage = LocalStorage(tmp_path, "iris", public_url="http://127.0.0.1:8000", secret="s" * 40)
    refs = await _stored_refs(storage, photos)
    delivery = ImageDelivery(
        VariantCache(storage, anyio.CapacityLimiter(2)), storage_publicly_reachable=False, url_ttl_seconds=60
    )
    async with httpx.AsyncClient() as http:
        vendor = provider(ProviderContext(environ={}, http=http))  # type: ignore[call-arg]
        model = ModelSpec(provider=vendor.id, model_id=model_id, type="vision")
        caps = vendor.capabilities(model)
        prompt = "Compare these four photos. " * 200

        def body_size(images: Sequence[ImagePart]) -> int:
            message = Message(role="user", parts=(TextPart(text=prompt), *images))
            return len(json.dumps(vendor.build_request([message], model, RequestOptions())).encode())

        unbudgeted = await delivery.parts(refs, caps, by_url=False)
        assert body_size(unbudgeted) > caps.max_request_bytes  # what happened before the budget

        budget = image_budget(caps, len(prompt.encode()))
        assert budget is not None
        images = await delivery.parts(refs, caps, by_url=False, budget=budget)
        size = body_size(images)
        assert size <= caps.max_request_bytes
        assert size > caps.max_request_bytes - 4 * FRAMING_BYTES - budget // 4  # fitted, not crushed
        for original, image in zip(photos, images, strict=True):
            assert image.data is not None
            assert len(image.data) <= len(original)


@pytest.fixture
async def budget_client(client: Client, auth: Callable[..., dict[str, str]]) -> tuple[Client, dict[str, str]]:
    """The local vision model with a vendor-like 200 kB request limit (``options.maxRequestBytes``)."""
    created = await client.post(
        "/api/models",
        json={
            "name": "Tight",
            "provider": "local",
            "modelId": "tight",
            "type": "vision",
            "options": {"maxRequestBytes": 200_000},
        },
        headers=auth("root", role="admin"),
    )
    assert created.status_code == 201, created.text
    assert created.json()["capabilities"]["maxRequestBytes"] == 200_000
    await offer(client, auth("root", role="admin"), "local/tight")
    return client, auth("alice")


async def test_images_over_the_budget_are_downscaled_to_fit(
    budget_client: tuple[Client, dict[str, str]],
) -> None:
    client, alice = budget_client
    thread = "budget-fit"
    images = [await upload(client, alice, thread, data=photo((800, 600)), name=f"{i}.jpg") for i in range(2)]
    assert all(i["size"] > 200_000 for i in images)  # each alone is over the whole request limit
    body = run_input(thread, user_message("look", *(i["parts"]["agui"] for i in images)), model="local/tight")
    events = await run(client, alice, body)
    text = answer_text(events)
    assert "800x600" not in text  # both arrived smaller than they were uploaded
    assert text.count("JPEG") == 2


async def test_a_request_that_cannot_fit_is_refused_before_the_stream(
    budget_client: tuple[Client, dict[str, str]], stored: Stored
) -> None:
    client, alice = budget_client
    thread = "budget-refused"
    image = await upload(client, alice, thread, data=photo((400, 300)))
    long_text = "word " * 40_000  # 200 kB of text: no room left for any image
    body = run_input(thread, user_message(long_text, image["parts"]["agui"]), model="local/tight")
    response = await client.post("/agent/runs", json=body, headers=alice)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "request_too_large"
    assert await stored.messages(thread) == []


@pytest.fixture
async def multimodal_budget_client(
    client: Client, auth: Callable[..., dict[str, str]]
) -> tuple[Client, dict[str, str]]:
    """The local multimodal model (PDFs and audio natively) with the same 200 kB request limit."""
    created = await client.post(
        "/api/models",
        json={
            "name": "Tight multimodal",
            "provider": "local",
            "modelId": "tight-multimodal",
            "type": "multimodal",
            "options": {"maxRequestBytes": 200_000},
        },
        headers=auth("root", role="admin"),
    )
    assert created.status_code == 201, created.text
    await offer(client, auth("root", role="admin"), "local/tight-multimodal")
    return client, auth("alice")


async def test_audio_over_the_budget_is_refused_before_anything_is_stored(
    multimodal_budget_client: tuple[Client, dict[str, str]], stored: Stored
) -> None:
    """Audio goes whole (it cannot be downscaled): 12 s of 16 kB/s WAV is 256 kB of base64, over the
    200 kB the model takes, so the run is refused up front, not by the vendor mid-stream."""
    client, alice = multimodal_budget_client
    thread = "budget-audio"
    clip = await upload(client, alice, thread, data=wav_bytes(12.0), name="long.wav")
    body = run_input(thread, user_message("listen", clip["parts"]["agui"]), model="local/tight-multimodal")
    response = await client.post("/agent/runs", json=body, headers=alice)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "request_too_large"
    assert "documents and audio" in response.json()["detail"]
    assert await stored.messages(thread) == []


async def test_a_document_and_audio_that_fit_go_beside_an_image(
    multimodal_budget_client: tuple[Client, dict[str, str]],
) -> None:
    """Within the budget, the clip and the PDF go natively and the photo beside them (re-encoded into
    the room they leave)."""
    client, alice = multimodal_budget_client
    thread = "budget-beside"
    clip = await upload(client, alice, thread, data=wav_bytes(3.0), name="note.wav")  # 64 kB base64
    pdf = await upload(client, alice, thread, data=text_pdf(["Quarterly report"]), name="report.pdf")
    image = await upload(client, alice, thread, data=photo((400, 300)), name="photo.jpg")
    parts = (clip["parts"]["agui"], pdf["parts"]["agui"], image["parts"]["agui"])
    body = run_input(thread, user_message("all of these", *parts), model="local/tight-multimodal")
    text = answer_text(await run(client, alice, body))
    assert "Audio 1 (note.wav): WAV, 3.00 seconds" in text
    assert 'Document 1 (report.pdf): PDF, 1 page, first line: "Quarterly report".' in text
    assert "Image 1: JPEG" in text


def test_natively_sent_documents_and_audio_count_in_full_and_text_fallbacks_do_not() -> None:
    """What a request reserves besides its images: native documents and audio by their base64 size
    (they cannot be made smaller); a document a model gets as text is not counted by its bytes."""
    clip = {"type": "audio", "mimeType": "audio/wav", "size": 48_000, "durationSeconds": 3.0}
    pdf = {"type": "document", "mimeType": "application/pdf", "size": 3_000, "pages": 2}
    row = MessageRow(role="user", content="hi", parts=[{"type": "text", "text": "hi"}, clip, pdf])
    multimodal = _local_caps("multimodal")
    vision = _local_caps("vision")
    assert multimodal.audio.mime_types  # reads both natively
    assert multimodal.documents.pdf
    assert not vision.audio.mime_types  # reads neither
    assert not vision.documents.pdf
    text_only = reserved_bytes([row], None, [], vision)
    assert text_only < 10  # "hi" and an empty tool list, not the PDF's 3,000 bytes
    assert reserved_bytes([row], None, [], multimodal) == text_only + 64_000 + 4_000


def _local_caps(kind: Literal["vision", "multimodal"]) -> Capabilities:
    return LocalProvider().capabilities(ModelSpec(provider="local", model_id=kind, type=kind))


def test_a_png_that_needs_no_change_keeps_its_encoding_without_metadata() -> None:
    """Our zlib settings need not beat the encoder that made a PNG: its own IDAT goes, chunks that
    carry metadata do not, and it is never larger."""
    image = Image.frombytes("RGB", (120, 90), os.urandom(120 * 90 * 3))
    info = PngImagePlugin.PngInfo()
    info.add_text("Author", "someone@example.com")
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=1, pnginfo=info)
    original = buffer.getvalue()
    out = normalise(original, Target(mime_types=("image/png",), max_bytes=20 * 1024 * 1024))
    assert len(out.data) < len(original)
    assert b"someone@example.com" not in out.data
    assert (out.width, out.height) == (120, 90)
    with Image.open(io.BytesIO(out.data)) as decoded:
        assert decoded.tobytes() == image.tobytes()
