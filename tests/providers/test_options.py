"""What the built-in providers declare about their options and keys (``providers/options.py``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from iris.providers import ModelSpec, OptionSpec, ProviderContext, declared_options, required_key_env
from iris.providers.registry import ProviderRegistry

KEY_VARIABLES = {
    "local": None,
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "ollama": None,
    "litellm": None,
}


def _spec(provider: str, **options: Any) -> ModelSpec:
    return ModelSpec(provider=provider, model_id="m", type="text", options=options)


@pytest.mark.parametrize("provider_id", sorted(KEY_VARIABLES))
async def test_built_ins_declare_their_options_and_key(provider_id: str, http: httpx.AsyncClient) -> None:
    provider = ProviderRegistry(ProviderContext(environ={}, http=http)).get(provider_id)
    declared = declared_options(provider)
    assert declared is not None
    assert all(isinstance(spec, OptionSpec) and spec.description for spec in declared.values())
    assert required_key_env(provider, _spec(provider_id)) == KEY_VARIABLES[provider_id]
    if "apiKeyEnv" in declared:  # a model may name another variable
        assert required_key_env(provider, _spec(provider_id, apiKeyEnv="OTHER_KEY")) == "OTHER_KEY"
    if provider_id != "local":
        assert "baseUrl" in declared


async def test_no_key_means_none(http: httpx.AsyncClient) -> None:
    provider = ProviderRegistry(ProviderContext(environ={}, http=http)).get("openai")
    assert required_key_env(provider, _spec("openai", noKey=True)) is None


def test_a_provider_that_declares_nothing_is_not_checked() -> None:
    assert declared_options(object()) is None
    assert required_key_env(object(), _spec("x")) is None


@pytest.mark.parametrize(
    ("spec", "good", "bad"),
    [
        (OptionSpec(type="string", description="d"), ["x", ""], [1, None, True]),
        (OptionSpec(type="string", description="d", choices=("a", "b")), ["a"], ["c", 1]),
        (OptionSpec(type="integer", description="d"), [0, 40], [1.5, True, "1"]),
        (OptionSpec(type="number", description="d"), [0, 2.5], [True, "1", None]),
        (OptionSpec(type="boolean", description="d"), [True, False], [0, "true"]),
        (OptionSpec(type="object", description="d"), [{}, {"a": 1}], [[], "x"]),
        (OptionSpec(type="array", description="d"), [[], [1]], [{}, "x"]),
    ],
)
def test_option_types(spec: OptionSpec, good: list[Any], bad: list[Any]) -> None:
    assert all(spec.accepts(v) for v in good)
    assert not any(spec.accepts(v) for v in bad)
