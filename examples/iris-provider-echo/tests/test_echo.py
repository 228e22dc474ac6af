"""The echo plugin tests itself with the conformance suite that ships with Iris's provider SPI."""

from __future__ import annotations

import asyncio

import httpx
from iris_provider_echo import create

from iris.providers import ImagePart, Message, ModelSpec, ProviderContext, RequestOptions, TextPart
from iris.providers.testing import ProviderConformance, collect, image_bytes

VISION = ModelSpec(provider="echo", model_id="e1", type="vision")


class TestEchoConformance(ProviderConformance):
    factory = staticmethod(create)
    vision_model = VISION
    stream_model = VISION  # echo needs no network, so the stream is checked too


def test_echo_says_what_it_was_sent() -> None:
    async def answer() -> str:
        async with httpx.AsyncClient() as http:
            echo = create(ProviderContext(environ={}, http=http))
            image = ImagePart(mime_type="image/png", width=4, height=3, data=image_bytes("PNG", (4, 3)))
            ask = [Message(role="user", parts=(TextPart(text="look"), image))]
            events = await collect(echo, ask, VISION)
            assert echo.build_request(ask, VISION, RequestOptions())["model"] == "e1"
            return "".join(getattr(e, "delta", "") for e in events)

    assert asyncio.run(answer()) == "echo: look [image 4x3]"
