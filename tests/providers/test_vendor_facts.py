"""A provider's declared counting figures (``vendor_facts``) are the ones the core uses — a third-party
plugin's as much as a built-in's — and a provider that declares none gets no estimate and its id as its
telemetry name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from importlib.metadata import EntryPoint

import httpx
import pytest

from iris.app.runs.content.usage import (
    attachment_estimate,
    image_part_estimate,
    request_attachment_tokens,
    request_image_tokens,
)
from iris.providers import (
    AudioPart,
    DocumentPart,
    ImagePart,
    Message,
    ModelSpec,
    Provider,
    ProviderContext,
    VendorFacts,
)
from iris.providers.image_formulas import anthropic_tokens
from iris.providers.registry import GROUP, ProviderRegistry
from iris.providers.testing.conformance import check_vendor_facts
from iris.providers.vendor_facts import NO_VENDOR_FACTS, telemetry_name, vendor_facts
from tests.plugins import counting

REQUEST = [
    Message(
        role="user",
        parts=(
            ImagePart(mime_type="image/png", width=1000, height=1000, data=b"png"),
            ImagePart(mime_type="image/png", width=200, height=200, data=b"png"),
            DocumentPart(mime_type="application/pdf", data=b"%PDF", pages=3),
            AudioPart(mime_type="audio/wav", data=b"RIFF", seconds=2.5),
        ),
    )
]


@pytest.fixture
async def registry() -> AsyncIterator[ProviderRegistry]:
    async with httpx.AsyncClient() as http:
        yield ProviderRegistry(
            ProviderContext(environ={}, http=http),
            entry_points_=[
                EntryPoint(name="counting", value="tests.plugins.counting:create", group=GROUP),
                EntryPoint(name="ollama", value="iris.providers.ollama:create", group=GROUP),
            ],
        )


def spec(provider: str, **options: object) -> ModelSpec:
    return ModelSpec(provider=provider, model_id="m", type="multimodal", options=options)


def test_a_plugins_declared_figures_are_the_ones_used(registry: ProviderRegistry) -> None:
    plugin = registry.get("counting")
    model = spec("counting")
    assert request_image_tokens(REQUEST, plugin, model) == 2 * counting.FLAT_IMAGE_TOKENS
    assert request_attachment_tokens(REQUEST, plugin) == (
        3 * counting.PAGE_TOKENS,
        round(2.5 * counting.SECOND_TOKENS),
    )
    image = image_part_estimate({"width": 640, "height": 480}, plugin, model, plugin.capabilities(model))
    assert image is not None
    assert (image["formula"], image["tokens"]) == ("flat", counting.FLAT_IMAGE_TOKENS)
    page = attachment_estimate({"type": "document", "pages": 4}, plugin, model)
    assert page is not None
    assert (page["rate"], page["tokens"]) == (counting.PAGE_TOKENS, 4 * counting.PAGE_TOKENS)
    assert telemetry_name(plugin) == counting.TELEMETRY_NAME


def test_a_models_image_cost_formula_still_names_a_published_one(registry: ProviderRegistry) -> None:
    plugin = registry.get("counting")
    by_anthropic = spec("counting", imageCostFormula="anthropic")
    expected = anthropic_tokens(1000, 1000) + anthropic_tokens(200, 200)
    assert request_image_tokens(REQUEST, plugin, by_anthropic) == expected
    assert request_image_tokens(REQUEST, plugin, spec("counting", imageCostFormula="none")) is None


def test_a_provider_that_declares_nothing_gets_no_estimate_and_its_id(registry: ProviderRegistry) -> None:
    ollama: Provider = registry.get("ollama")
    assert vendor_facts(ollama) is NO_VENDOR_FACTS
    assert request_image_tokens(REQUEST, ollama, spec("ollama")) is None
    assert request_attachment_tokens(REQUEST, ollama) == (None, None)
    assert telemetry_name(ollama) == "ollama"


def test_the_conformance_kit_refuses_facts_the_core_cannot_use(registry: ProviderRegistry) -> None:
    plugin = registry.get("counting")
    check_vendor_facts(plugin, spec("counting"))

    class Misdeclared(counting.CountingProvider):
        vendor_facts = {"pdfPageTokens": 11}  # type: ignore[assignment]

    with pytest.raises(AssertionError, match="must be a VendorFacts"):
        check_vendor_facts(Misdeclared(), spec("counting"))

    class Negative(counting.CountingProvider):
        vendor_facts = VendorFacts(pdf_page_tokens=-1)

    with pytest.raises(AssertionError, match="tokens per page or second"):
        check_vendor_facts(Negative(), spec("counting"))
