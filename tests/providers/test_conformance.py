"""Every built-in provider passes the conformance suite that ships with the SPI
(``iris.providers.testing``), the same one a plugin package runs on itself."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from iris.providers import ModelSpec, Provider, ProviderContext, ReasoningPart, RequestOptions
from iris.providers.local import sign
from iris.providers.registry import ProviderRegistry
from iris.providers.testing import ProviderConformance, check_provider
from iris.providers.testing.conformance import THINK, ask

BUILT_INS = ("local", "openai", "anthropic", "gemini", "ollama", "litellm")
# A representative vision model id per vendor (capabilities may depend on it).
MODEL_IDS = {
    "local": "vision",
    "openai": "gpt-4o",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
    "ollama": "llava",
    "litellm": "gpt-4o",
}
# A model per vendor that reasons (by name, or declared in its options).
REASONING_MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "local": ("vision", {}),
    "openai": ("o3", {}),
    "anthropic": ("claude-sonnet-4-5", {}),
    "gemini": ("gemini-2.5-flash", {}),
    "ollama": ("qwen3", {"reasoning": True}),
    "litellm": ("anthropic/claude-sonnet-4-5", {"reasoning": True}),
}


def reasoning_model(provider_id: str, **options: Any) -> ModelSpec:
    model_id, declared = REASONING_MODELS[provider_id]
    return ModelSpec(
        provider=provider_id, model_id=model_id, type="text", supports_tools=True, options=declared | options
    )


@pytest.fixture(scope="module")
def registry() -> Iterator[ProviderRegistry]:
    http = httpx.AsyncClient()  # build_request never touches it
    yield ProviderRegistry(ProviderContext(environ={}, http=http))
    asyncio.run(http.aclose())


def test_all_built_ins_load(registry: ProviderRegistry) -> None:
    loaded, failures = registry.load_all()
    assert set(loaded) >= set(BUILT_INS), [f.error for f in failures]


class TestBuiltIns(ProviderConformance):
    """The suite, parametrised over the built-ins instead of one plugin's factory."""

    @pytest.fixture(name="provider", params=BUILT_INS)
    def _provider(  # a parametrised registry lookup, not a factory
        self, request: pytest.FixtureRequest, registry: ProviderRegistry
    ) -> Provider:
        return registry.get(request.param)

    @pytest.fixture(name="vision_model")
    def _vision_model(self, provider: Provider) -> ModelSpec:
        return ModelSpec(provider=provider.id, model_id=MODEL_IDS[provider.id], type="vision")

    @pytest.fixture(name="stream_model")
    def _stream_model(self, provider: Provider, vision_model: ModelSpec) -> ModelSpec:
        if provider.id != "local":
            pytest.skip(f"{provider.id} streams against its loopback fake in its own test module")
        return vision_model

    @pytest.fixture(name="reasoning_model")
    def _reasoning_model(self, provider: Provider) -> ModelSpec:
        model = reasoning_model(provider.id)
        assert provider.capabilities(model).reasoning.supported, f"{provider.id} should reason with {model}"
        return model

    @pytest.fixture(name="signed_reasoning")
    def _signed_reasoning(self, provider: Provider) -> ReasoningPart:
        thought = "I should call the clock."
        signature = sign(thought) if provider.id == "local" else "OWN-SIGNATURE=="  # local checks its own
        return ReasoningPart(provider=provider.id, text=thought, signature=signature, tool_call_id="call_1")


@pytest.mark.parametrize("provider_id", BUILT_INS)
def test_a_model_that_cannot_reason_is_asked_for_none(registry: ProviderRegistry, provider_id: str) -> None:
    provider = registry.get(provider_id)
    model = reasoning_model(provider_id, reasoning=False)
    assert not provider.capabilities(model).reasoning.supported
    off = provider.build_request(ask(), model, RequestOptions())
    assert provider.build_request(ask(), model, RequestOptions(reasoning=THINK)) == off


def test_the_suite_fails_a_provider_that_drops_what_it_cannot_take(registry: ProviderRegistry) -> None:
    """The suite can fail: a provider that silently drops an undeclared image is caught."""
    local = registry.get("local")

    class Dropping:
        id = "dropping"
        spec_version = local.spec_version
        capabilities = staticmethod(local.capabilities)
        stream = staticmethod(local.stream)

        def build_request(self, messages, model, options):  # type: ignore[no-untyped-def]
            return {"messages": [str(m.parts[0]) for m in messages]}  # images vanish, nothing raised

    model = ModelSpec(provider="dropping", model_id="vision", type="vision")
    with pytest.raises(AssertionError, match="bytes"):
        check_provider(Dropping(), model)
