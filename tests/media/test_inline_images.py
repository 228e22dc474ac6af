"""Images sent inline (the OpenAI gateway's ``data:`` URLs): checked like uploads, normalised from
memory, never written to storage, remembered for the next turn, and always delivered inline."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import anyio
import pytest

from iris.app.errors import PayloadTooLarge, Unprocessable, UnsupportedMediaType
from iris.app.media.inline_request import decode_data_url, inspect_inline
from iris.app.media.pipeline import ImageDelivery, ImageRef
from iris.app.media.variants import VariantCache
from iris.app.storage.local import LocalStorage
from iris.providers import Capabilities
from tests.support.images import image_bytes, png_bomb

CAPS = Capabilities(
    vision=True,
    image_mime_types=("image/png", "image/jpeg", "image/webp"),
    max_images=4,
    max_image_bytes=5_000_000,
    url_fetch="public_https",
)


def _url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def test_a_data_url_decodes_within_its_bound() -> None:
    data = image_bytes("PNG", size=(8, 8))
    assert decode_data_url(_url(data), max_bytes=10_000, field="f") == data
    with pytest.raises(PayloadTooLarge) as large:
        decode_data_url(_url(data), max_bytes=len(data) - 1, field="f")
    assert (large.value.code, large.value.field) == ("file_too_large", "f")
    for bad in ("data:image/png,abc", "data:image/png;base64,@@@", "https://example.com/a.png"):
        with pytest.raises(Unprocessable) as refused:
            decode_data_url(bad, max_bytes=10_000, field="f")
        assert refused.value.code == "invalid_data_url"


async def test_inline_bytes_are_sniffed_and_bomb_safe() -> None:
    limiter = anyio.CapacityLimiter(1)
    image = await inspect_inline(
        image_bytes("WEBP", size=(20, 10)), name="", max_pixels=10**6, limiter=limiter, field="f"
    )
    assert (image.mime_type, image.width, image.height, image.name) == ("image/webp", 20, 10, "image.webp")
    with pytest.raises(UnsupportedMediaType) as text:
        await inspect_inline(b"hello, not an image", name="", max_pixels=10**6, limiter=limiter, field="f")
    assert text.value.field == "f"
    with pytest.raises(Unprocessable):
        await inspect_inline(png_bomb(), name="", max_pixels=10**6, limiter=limiter, field="f")


async def test_an_inline_image_is_never_stored_and_is_remembered(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path, "iris", public_url="https://iris.example.com", secret="s" * 40)
    cache = VariantCache(storage, anyio.CapacityLimiter(1))
    delivery = ImageDelivery(cache, storage_publicly_reachable=True, url_ttl_seconds=60)
    data = image_bytes("PNG", size=(64, 48))
    ref = ImageRef(path="", mime_type="image/png", sha256=hashlib.sha256(data).hexdigest(), data=data)

    (first,) = await delivery.parts([ref], CAPS, by_url=True)  # URLs allowed, but it was never stored
    (again,) = await delivery.parts([ref], CAPS, by_url=True)

    assert first.url is None
    assert first.data is not None
    assert again.data == first.data
    assert (cache.misses, cache.hits) == (1, 1)
    written = await anyio.to_thread.run_sync(lambda: [p for p in tmp_path.rglob("*") if p.is_file()])
    assert written == []  # nothing stored, original or variant
