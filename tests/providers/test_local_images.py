"""The local model's image description: a JPEG decoded at a reduced scale and a box-averaged shrink
must still report the image's own size and its colours (issue 26 made both cheaper)."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image, ImageDraw

from iris.providers import ImagePart
from iris.providers.local_media import describe_image

MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


def _encoded(image: Image.Image, fmt: str) -> ImagePart:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return ImagePart(mime_type=MIME[fmt], width=image.width, height=image.height, data=buffer.getvalue())


def _shares(description: str) -> dict[str, int]:
    """Each colour name's share in percent, summed over the colours listed."""
    shares: dict[str, int] = {}
    for name, percent in re.findall(r"(\w+) #[0-9a-f]{6} (\d+)%", description):
        shares[name] = shares.get(name, 0) + int(percent)
    return shares


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP"])
def test_a_large_image_reports_its_own_size_not_the_decoded_scale(fmt: str) -> None:
    # 2000x1500 lets a JPEG decode at 1/8 (250x188): the size said must still be the file's.
    part = _encoded(Image.new("RGB", (2000, 1500), (30, 60, 220)), fmt)

    description = describe_image(part, 1)

    assert description.startswith(f"Image 1: {fmt}, 2000x1500 pixels, dominant colours: blue #")
    assert _shares(description) == {"blue": 100}


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP"])
def test_two_halves_are_named_with_half_each(fmt: str) -> None:
    image = Image.new("RGB", (1280, 960), (220, 30, 30))
    ImageDraw.Draw(image).rectangle((640, 0, 1279, 959), fill=(30, 160, 60))

    shares = _shares(describe_image(_encoded(image, fmt), 2))

    assert set(shares) == {"red", "green"}
    assert 45 <= shares["red"] <= 55
    assert 45 <= shares["green"] <= 55


def test_an_image_smaller_than_the_sample_is_described_whole() -> None:
    description = describe_image(_encoded(Image.new("RGB", (7, 5), (245, 150, 190)), "JPEG"), 3)

    assert description.startswith("Image 3: JPEG, 7x5 pixels, dominant colours: pink #")
