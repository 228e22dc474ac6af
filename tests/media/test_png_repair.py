"""A PNG damaged only in an optional chunk is repaired (the chunk dropped, the pixels kept) wherever an
image comes in; damage to what the pixels depend on is refused saying what is wrong, never called
"unrecognised binary data". PNGs built here, chunk by chunk."""

from __future__ import annotations

import io
import struct
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from PIL import Image

from iris.app.errors import Unprocessable
from iris.app.media.images import inspect_image
from iris.app.media.inline_request import inspect_inline
from iris.app.media.png_chunks import PNG_SIGNATURE, PngDamage, checked_png
from iris.app.media.tool_media import MediaStore, ResultLimits, canonical_parts
from iris.app.persistence.db import create_alchemy_config
from iris.app.settings import Settings
from iris.app.storage.local import LocalStorage
from iris.tools import ImageContent

MAX_PIXELS = 10**6
RED = (200, 30, 30)


def chunk(kind: bytes, data: bytes, *, crc: int | None = None) -> bytes:
    real = zlib.crc32(kind + data)
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", real if crc is None else crc)


def png(*, bad: bytes | None = None) -> bytes:
    """A 4x3 red RGB PNG with a text chunk and a colour profile; ``bad``: the chunk whose CRC is wrong."""
    header = struct.pack(">IIBBBBB", 4, 3, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + bytes(RED) * 4 for _ in range(3)))
    profile = b"sRGB-ish\x00\x00" + zlib.compress(b"not really a profile" * 8)
    chunks = [
        (b"IHDR", header),
        (b"tEXt", b"Comment\x00made in the test"),
        (b"iCCP", profile),
        (b"IDAT", pixels),
        (b"IEND", b""),
    ]
    return PNG_SIGNATURE + b"".join(
        chunk(kind, data, crc=0xDEADBEEF if kind == bad else None) for kind, data in chunks
    )


def pixels(data: bytes) -> tuple[tuple[int, int], bytes]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size, image.convert("RGB").tobytes()


def test_an_intact_png_is_kept_as_it_came() -> None:
    data = png()
    assert checked_png(data) is data
    info = inspect_image(data, max_pixels=MAX_PIXELS)
    assert (info.mime_type, info.width, info.height, info.repaired) == ("image/png", 4, 3, None)


@pytest.mark.parametrize("kind", [b"iCCP", b"tEXt"])
def test_a_bad_crc_on_an_optional_chunk_is_dropped_and_the_pixels_kept(kind: bytes) -> None:
    info = inspect_image(png(bad=kind), max_pixels=MAX_PIXELS)

    assert (info.mime_type, info.width, info.height) == ("image/png", 4, 3)
    assert info.repaired is not None
    assert kind not in info.repaired
    assert pixels(info.repaired) == ((4, 3), bytes(RED) * 12)
    assert checked_png(info.repaired) is info.repaired  # what is kept is whole


@pytest.mark.parametrize(
    ("damaged", "says"),
    [
        (png(bad=b"IDAT"), "its IDAT chunk fails its CRC check"),
        (png(bad=b"IHDR"), "its IHDR chunk fails its CRC check"),
        (png()[:-20], "it is truncated (it ends inside its IDAT chunk)"),
        (png()[:-12], "it is truncated (it ends before its IEND chunk)"),
    ],
)
def test_damage_the_pixels_depend_on_is_refused_saying_what_it_is(damaged: bytes, says: str) -> None:
    with pytest.raises(PngDamage, match=says.replace("(", r"\(").replace(")", r"\)")):
        checked_png(damaged)
    with pytest.raises(Unprocessable) as refused:
        inspect_image(damaged, max_pixels=MAX_PIXELS)
    assert refused.value.code == "image_undecodable"
    assert refused.value.detail == f"The PNG is damaged: {says}."


async def test_an_inline_image_is_repaired_too() -> None:
    image = await inspect_inline(
        png(bad=b"iCCP"), name="", max_pixels=MAX_PIXELS, limiter=anyio.CapacityLimiter(1), field="f"
    )
    assert b"iCCP" not in image.data
    assert pixels(image.data) == ((4, 3), bytes(RED) * 12)


async def test_an_upload_is_repaired_and_a_damaged_one_refused_with_the_reason(
    client: AsyncTestClient[Litestar], auth: Callable[..., dict[str, str]]
) -> None:
    alice = auth("alice")
    thread = str(uuid.uuid4())

    async def send(data: bytes) -> dict[str, object]:
        files = {"file": ("logo.png", data, "image/png")}
        response = await client.post("/api/files", files=files, data={"threadId": thread}, headers=alice)
        answer: dict[str, object] = {"status": response.status_code, **response.json()}
        return answer

    kept = await send(png(bad=b"iCCP"))
    assert kept["status"] == 201, kept
    assert (kept["mimeType"], kept["width"], kept["height"]) == ("image/png", 4, 3)
    stored = await client.get(str(kept["url"]))
    assert stored.status_code == 200
    assert b"iCCP" not in stored.content
    assert kept["size"] == len(stored.content)
    assert pixels(stored.content) == ((4, 3), bytes(RED) * 12)

    refused = await send(png(bad=b"IDAT"))
    assert (refused["status"], refused["code"]) == (422, "image_undecodable"), refused
    assert refused["detail"] == "The PNG is damaged: its IDAT chunk fails its CRC check."


async def test_a_tools_image_is_repaired_and_a_damaged_one_becomes_a_notice(
    settings: Settings, tmp_path: Path
) -> None:
    """What a tool returned, made storable (:func:`iris.app.media.tool_media.canonical_parts`) on the real
    database and local storage."""
    alchemy = create_alchemy_config(settings)
    store = MediaStore(
        storage=LocalStorage(tmp_path, "iris", public_url="http://127.0.0.1:8000", secret="s" * 40),
        alchemy=alchemy,
        limiter=anyio.CapacityLimiter(1),
        limits=ResultLimits(
            max_text_bytes=10_000, max_media=4, max_media_bytes=1_000_000, max_image_pixels=MAX_PIXELS
        ),
    )
    content = [ImageContent(data=png(bad=kind), mime_type="image/png") for kind in (b"iCCP", b"IDAT")]
    try:
        kept, refused = await canonical_parts(content, store, owner_id="alice", thread_id="t-png")
    finally:
        await alchemy.get_engine().dispose()

    assert (kept["type"], kept["mimeType"], kept["width"], kept["height"]) == ("image", "image/png", 4, 3)
    stored = await store.storage.read(kept["path"])
    assert (len(stored), b"iCCP" in stored) == (kept["size"], False)
    assert pixels(stored) == ((4, 3), bytes(RED) * 12)
    notice = "[an image (image/png) was not kept: The PNG is damaged: its IDAT chunk fails its CRC check.]"
    assert refused == {"type": "text", "text": notice}
