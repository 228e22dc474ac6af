"""A third-party provider that declares its vendor's counting figures (``vendor_facts``), with figures no
built-in vendor has, so a test can see the core use them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from iris.providers import (
    SPEC_VERSION,
    Capabilities,
    Finish,
    ImageFormula,
    Message,
    ModelSpec,
    ProviderContext,
    ProviderEvent,
    RequestOptions,
    VendorFacts,
)

FLAT_IMAGE_TOKENS = 7
PAGE_TOKENS = 11
SECOND_TOKENS = 5
TELEMETRY_NAME = "example.counting"


class CountingProvider:
    id = "counting"
    spec_version = SPEC_VERSION
    vendor_facts = VendorFacts(
        image_formula=ImageFormula("flat", lambda _width, _height, _model_id, _detail: FLAT_IMAGE_TOKENS),
        pdf_page_tokens=PAGE_TOKENS,
        audio_second_tokens=SECOND_TOKENS,
        telemetry_name=TELEMETRY_NAME,
    )

    def capabilities(self, model: ModelSpec) -> Capabilities:
        return Capabilities(vision=True, image_mime_types=("image/png",), max_images=4)

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        return {"messages": len(messages)}

    async def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        yield Finish(reason="stop")


def create(context: ProviderContext) -> CountingProvider:
    return CountingProvider()
