"""The core image pipeline with real Pillow images: normalisation, the variant cache, capability checks."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
from PIL import Image

from iris.app.errors import Unprocessable
from iris.app.media.normalise import CannotFit, Target, normalise
from iris.app.media.pipeline import ImageDelivery, ImageRef, check_images, target_for
from iris.app.media.variants import VariantCache
from iris.app.storage.local import LocalStorage
from iris.providers import Capabilities, ModelSpec, Provider, ProviderContext
from iris.providers.anthropic import AnthropicProvider
from iris.providers.ollama import OllamaProvider
from tests.support.images import image_bytes


def _vendor_caps(provider: Provider, model_id: str) -> Capabilities:
    return provider.capabilities(ModelSpec(provider=provider.id, model_id=model_id, type="vision"))


_HTTP = httpx.AsyncClient()  # the providers' constructors keep it; capabilities() never uses it
ANTHROPIC_CAPS = _vendor_caps(AnthropicProvider(ProviderContext(environ={}, http=_HTTP)), "claude-sonnet-4-5")
OLLAMA_CAPS = _vendor_caps(OllamaProvider(ProviderContext(environ={}, http=_HTTP)), "llava")


def _open(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def rotated_jpeg() -> bytes:
    """A 60x20 picture, left half red, right half blue, stored sideways with EXIF orientation 6."""
    upright = Image.new("RGB", (60, 20), (220, 20, 20))
    upright.paste((20, 20, 220), (30, 0, 60, 20))
    stored = upright.transpose(
        Image.Transpose.ROTATE_90
    )  # what a phone writes: pixels turned, tag says turn back
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 CW to display
    exif[0x010F] = "PhoneMaker"  # Make: metadata that must not reach the vendor
    buffer = io.BytesIO()
    stored.save(buffer, "JPEG", quality=95, exif=exif.tobytes(), icc_profile=b"\x00" * 128)
    return buffer.getvalue()


def test_exif_rotated_jpeg_arrives_upright_and_stripped() -> None:
    original = rotated_jpeg()
    assert _open(original).size == (20, 60)
    out = normalise(original, target_for(ANTHROPIC_CAPS))
    image = _open(out.data)
    assert out.mime_type == "image/jpeg"
    assert image.size == (out.width, out.height) == (60, 20)
    left, right = image.getpixel((5, 10)), image.getpixel((55, 10))
    assert isinstance(left, tuple)
    assert isinstance(right, tuple)
    assert left[0] > 150 > left[2]  # red on the left
    assert right[2] > 150 > right[0]  # blue on the right
    assert not image.getexif()
    assert "icc_profile" not in image.info
    assert "exif" not in image.info


def test_vendor_figures_are_the_ones_under_test() -> None:
    assert ANTHROPIC_CAPS.recommended_long_edge_px == 1568
    assert (ANTHROPIC_CAPS.max_image_bytes, ANTHROPIC_CAPS.image_bytes_measured_on) == (
        5 * 1024 * 1024,
        "base64",
    )
    assert "image/webp" not in OLLAMA_CAPS.image_mime_types


def test_large_png_fits_anthropic_edge_and_base64_limit() -> None:
    side = (4000, 3000)
    noisy = Image.frombytes("RGB", side, os.urandom(side[0] * side[1] * 3))
    buffer = io.BytesIO()
    noisy.save(buffer, "PNG", compress_level=1)
    out = normalise(buffer.getvalue(), target_for(ANTHROPIC_CAPS))
    assert max(out.width, out.height) <= 1568
    assert len(base64.b64encode(out.data)) <= 5 * 1024 * 1024
    assert out.mime_type == "image/png"  # PNG stays PNG; it got smaller instead
    assert abs(out.width / out.height - 4 / 3) < 0.01


def test_webp_for_ollama_becomes_png() -> None:
    out = normalise(image_bytes("WEBP", size=(50, 40)), target_for(OLLAMA_CAPS))
    assert out.mime_type == "image/png"
    assert _open(out.data).format == "PNG"
    assert (out.width, out.height) == (50, 40)


def test_alpha_png_to_a_jpeg_only_model_is_flattened_on_white() -> None:
    transparent = Image.new("RGBA", (10, 10), (0, 0, 0, 0))
    buffer = io.BytesIO()
    transparent.save(buffer, "PNG")
    out = normalise(buffer.getvalue(), Target(mime_types=("image/jpeg",), max_bytes=1 << 20))
    assert out.mime_type == "image/jpeg"
    assert _open(out.data).getpixel((5, 5)) == (255, 255, 255)


def test_cannot_fit_is_reported() -> None:
    with pytest.raises(CannotFit):
        normalise(image_bytes("PNG"), Target(mime_types=("image/gif",), max_bytes=1 << 20))
    with pytest.raises(CannotFit):
        normalise(image_bytes("PNG", size=(300, 300)), Target(mime_types=("image/png",), max_bytes=10))


@pytest.mark.parametrize(
    ("caps", "mimes", "code"),
    [
        (Capabilities(vision=False), ["image/png"], "model_lacks_vision"),
        (OLLAMA_CAPS, ["image/png"] * (OLLAMA_CAPS.max_images + 1), "too_many_images"),
        (
            Capabilities(vision=True, image_mime_types=("image/heic",), max_images=4),
            ["image/png"],
            "image_type_unsupported",
        ),
    ],
    ids=["no-vision", "too-many", "no-convertible-type"],
)
def test_capability_check(caps: Capabilities, mimes: list[str], code: str) -> None:
    with pytest.raises(Unprocessable) as caught:
        check_images(caps, mimes, model_ref="x/y")
    assert caught.value.code == code
    assert caught.value.status_code == 422


def test_capability_check_passes_text_only_and_fitting_requests() -> None:
    check_images(Capabilities(vision=False), [], model_ref="local/text")
    check_images(OLLAMA_CAPS, ["image/webp"] * OLLAMA_CAPS.max_images, model_ref="ollama/llava")


async def _store(storage: LocalStorage, path: str, data: bytes) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield data

    await storage.put(path, chunks(), content_type="image/png")


async def test_variant_cache_second_turn_reuses_the_variant(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path, "iris", public_url="http://127.0.0.1:8000", secret="s" * 40)
    side = (3000, 2000)
    noisy = Image.frombytes("RGB", side, os.urandom(side[0] * side[1] * 3))
    buffer = io.BytesIO()
    noisy.save(buffer, "PNG", compress_level=1)
    original = buffer.getvalue()
    ref = ImageRef(
        path="agent-inputs/u/t/uploads/a.png",
        mime_type="image/png",
        sha256=hashlib.sha256(original).hexdigest(),
    )
    await _store(storage, ref.path, original)
    cache = VariantCache(storage, anyio.CapacityLimiter(2))
    delivery = ImageDelivery(cache, storage_publicly_reachable=False, url_ttl_seconds=60)

    start = time.perf_counter()
    first = await delivery.parts([ref], ANTHROPIC_CAPS, by_url=False)
    first_seconds = time.perf_counter() - start
    start = time.perf_counter()
    second = await delivery.parts([ref], ANTHROPIC_CAPS, by_url=False)
    second_seconds = time.perf_counter() - start

    assert (cache.misses, cache.hits) == (1, 1)
    assert first[0].data == second[0].data
    assert (second[0].width, second[0].height) == (first[0].width, first[0].height)
    assert first_seconds > second_seconds  # a cache hit does no decoding: it is the faster one
    stored = list((tmp_path / "iris" / "derived").rglob("*.png"))
    assert len(stored) == 1

    # Another target is another variant.
    await delivery.parts([ref], OLLAMA_CAPS, by_url=False)
    assert cache.misses == 2


async def test_recent_variants_come_from_memory_within_its_budget(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path, "iris", public_url="http://127.0.0.1:8000", secret="s" * 40)
    refs = []
    for name, color in (("a", (200, 30, 30)), ("b", (30, 30, 200))):
        original = image_bytes("PNG", size=(400, 300), color=color)
        ref = ImageRef(
            path=f"agent-inputs/u/t/uploads/{name}.png",
            mime_type="image/png",
            sha256=hashlib.sha256(original).hexdigest(),
        )
        await _store(storage, ref.path, original)
        refs.append(ref)
    first = VariantCache(storage, anyio.CapacityLimiter(1))
    made = [await first.get(r.path, r.mime_type, r.sha256, target_for(ANTHROPIC_CAPS)) for r in refs]
    budget = max(len(variant.data) for _, variant in made)  # room for one variant, not two

    cache = VariantCache(storage, anyio.CapacityLimiter(1), memory_bytes=budget)
    target = target_for(ANTHROPIC_CAPS)
    a_path, a_variant = await cache.get(refs[0].path, "image/png", refs[0].sha256, target)
    (tmp_path / "iris" / a_path).unlink()  # gone from storage: only memory can answer now
    assert await cache.get(refs[0].path, "image/png", refs[0].sha256, target) == (a_path, a_variant)
    assert (cache.hits, cache.misses) == (2, 0)

    await cache.get(refs[1].path, "image/png", refs[1].sha256, target)  # pushes "a" out of memory
    again = await cache.get(refs[0].path, "image/png", refs[0].sha256, target)
    assert cache.misses == 1  # made again: neither memory nor storage had it
    assert again[1].data == a_variant.data


async def test_url_delivery_signs_the_variant(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path, "iris", public_url="http://127.0.0.1:8000", secret="s" * 40)
    data = image_bytes("PNG")
    ref = ImageRef(
        path="agent-inputs/u/t/uploads/b.png", mime_type="image/png", sha256=hashlib.sha256(data).hexdigest()
    )
    await _store(storage, ref.path, data)
    delivery = ImageDelivery(
        VariantCache(storage, anyio.CapacityLimiter(1)), storage_publicly_reachable=True, url_ttl_seconds=60
    )
    assert delivery.by_url(ANTHROPIC_CAPS)
    assert not delivery.by_url(OLLAMA_CAPS)
    (part,) = await delivery.parts([ref], ANTHROPIC_CAPS, by_url=True)
    assert part.data is None
    assert part.url is not None
    assert "/storage/v1/object/sign/iris/derived/" in part.url
    unreachable = ImageDelivery(
        VariantCache(storage, anyio.CapacityLimiter(1)), storage_publicly_reachable=False, url_ttl_seconds=60
    )
    assert not unreachable.by_url(ANTHROPIC_CAPS)
