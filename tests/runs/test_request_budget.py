"""The whole-request budget: re-encoding never grows an image, and four near-limit photos fit the
request limit a vendor declares (downscaled further), or the request is refused before the stream."""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import anyio
import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from PIL import Image, PngImagePlugin

from app.media.normalise import Target, normalise
from app.media.pipeline import FRAMING_BYTES, ImageDelivery, ImageRef, image_budget
from app.media.variants import VariantCache
from app.storage.local import LocalStorage
from providers import (
    Capabilities,
    ImagePart,
    Message,
    ModelSpec,
    Provider,
    ProviderContext,
    RequestOptions,
    TextPart,
)
from providers.anthropic import AnthropicProvider
from providers.gemini import GeminiProvider
from providers.ollama import OllamaProvider
from providers.openai import OpenAIProvider
from tests.runs.conftest import Stored
from tests.runs.helpers import answer_text, run, run_input, upload, user_message
from tests.support.agents import offer

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
    """The figures and their sources are in docs/decisions.md (Provider layer, issue 12)."""
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
