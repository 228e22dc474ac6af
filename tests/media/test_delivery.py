"""Delivery end to end against the fake OpenAI server: URL first where allowed, one inline retry."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from iris.app.media.pipeline import ImageDelivery, ImageRef, stream_with_inline_fallback
from iris.app.media.variants import VariantCache
from iris.app.storage.local import LocalStorage
from iris.providers import (
    Message,
    ModelSpec,
    ProviderContext,
    ProviderError,
    RequestOptions,
    TextDelta,
    TextPart,
)
from iris.providers.openai import OpenAIProvider
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI()
    with serve_asgi(server.app) as base:
        yield server, base


@pytest.fixture
async def setup(tmp_path: Path) -> tuple[ImageDelivery, ImageRef]:
    storage = LocalStorage(tmp_path, "iris", public_url="https://iris.example.com", secret="s" * 40)
    data = image_bytes("PNG", size=(40, 30))

    async def once() -> AsyncIterator[bytes]:
        yield data

    ref = ImageRef(
        path="agent-inputs/u/t/uploads/x.png", mime_type="image/png", sha256=hashlib.sha256(data).hexdigest()
    )
    await storage.put(ref.path, once(), content_type="image/png")
    return (
        ImageDelivery(
            VariantCache(storage, anyio.CapacityLimiter(1)),
            storage_publicly_reachable=True,
            url_ttl_seconds=60,
        ),
        ref,
    )


async def _run(
    delivery: ImageDelivery, ref: ImageRef, base: str, *, by_url: bool
) -> tuple[list[str], list[bool]]:
    async with httpx.AsyncClient() as http:
        provider = OpenAIProvider(ProviderContext(environ={"OPENAI_API_KEY": "sk-test-123"}, http=http))
        model = ModelSpec(
            provider="openai", model_id="gpt-4o", type="vision", options={"baseUrl": f"{base}/v1"}
        )
        caps = provider.capabilities(model)
        built: list[bool] = []

        async def build(url_delivery: bool) -> list[Message]:
            built.append(url_delivery)
            parts = await delivery.parts([ref], caps, by_url=url_delivery)
            return [Message(role="user", parts=(TextPart(text="What is this?"), *parts))]

        texts = [
            e.delta
            async for e in stream_with_inline_fallback(
                provider, model, RequestOptions(), build, by_url=by_url
            )
            if isinstance(e, TextDelta)
        ]
        return texts, built


async def test_url_first_then_one_inline_retry(
    fake: tuple[FakeOpenAI, str], setup: tuple[ImageDelivery, ImageRef]
) -> None:
    server, base = fake
    delivery, ref = setup
    server.download_failed("https://iris.example.com/storage/v1/object/sign/iris/derived/x.png")
    server.text("A small ", "red box.")
    texts, built = await _run(delivery, ref, base, by_url=True)
    assert texts == ["A small ", "red box."]
    assert built == [True, False]
    first, second = (r.json["messages"][0]["content"][1]["image_url"]["url"] for r in server.requests)
    assert first.startswith("https://iris.example.com/storage/v1/object/sign/iris/derived/")
    assert second.startswith("data:image/png;base64,")


async def test_no_retry_when_the_failure_is_not_a_download(
    fake: tuple[FakeOpenAI, str], setup: tuple[ImageDelivery, ImageRef]
) -> None:
    server, base = fake
    delivery, ref = setup
    server.server_error()
    with pytest.raises(ProviderError) as caught:
        await _run(delivery, ref, base, by_url=True)
    assert caught.value.kind == "unavailable"
    assert len(server.requests) == 1


async def test_inline_delivery_is_never_retried(
    fake: tuple[FakeOpenAI, str], setup: tuple[ImageDelivery, ImageRef]
) -> None:
    server, base = fake
    delivery, ref = setup
    server.download_failed("whatever")
    with pytest.raises(ProviderError) as caught:
        await _run(delivery, ref, base, by_url=False)
    assert caught.value.kind == "could_not_fetch_image"
    assert len(server.requests) == 1
