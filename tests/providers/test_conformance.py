"""Every registered provider honours its declared capabilities, and nothing more.

A declared image type yields that vendor's own image block carrying the exact bytes; an undeclared
type, an image to a text model, or a URL to a provider that cannot fetch raises UnsupportedPartError.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from providers import (
    ImagePart,
    Message,
    ModelSpec,
    Provider,
    ProviderContext,
    RequestOptions,
    TextPart,
    ToolSpec,
    UnsupportedPartError,
)
from providers.registry import ProviderRegistry
from providers.spec import ModelType
from tests.support.images import image_bytes

BUILT_INS = {"local", "openai", "anthropic", "gemini", "ollama", "litellm"}
# A representative vision model id per vendor (capabilities may depend on it).
MODEL_IDS = {
    "local": "vision",
    "openai": "gpt-4o",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
    "ollama": "llava",
    "litellm": "gpt-4o",
}
FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WEBP"}
TOOL = ToolSpec(
    name="current_time", description="The time now.", parameters={"type": "object", "properties": {}}
)


@pytest.fixture(scope="module")
def registry() -> Iterator[ProviderRegistry]:
    http = httpx.AsyncClient()  # build_request never touches it
    yield ProviderRegistry(ProviderContext(environ={}, http=http))
    asyncio.run(http.aclose())


@pytest.fixture(params=sorted(BUILT_INS))
def provider(request: pytest.FixtureRequest, registry: ProviderRegistry) -> Provider:
    return registry.get(request.param)


def _model(provider: Provider, kind: ModelType = "vision") -> ModelSpec:
    model_id = MODEL_IDS.get(provider.id, "model")
    return ModelSpec(provider=provider.id, model_id=model_id, type=kind, supports_tools=True)


def _ask(*parts: Any) -> list[Message]:
    return [Message(role="user", parts=(TextPart(text="What is in this picture?"), *parts))]


def _text_values(value: Any) -> Iterator[str]:
    """Every string stored under a key named like a text field, anywhere in the request."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in {"text", "content", "prompt"} and isinstance(item, str):
                yield item
            yield from _text_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _text_values(item)


def test_all_built_ins_load(registry: ProviderRegistry) -> None:
    loaded, failures = registry.load_all()
    assert set(loaded) >= BUILT_INS, [f.error for f in failures]


def test_declared_image_types_become_native_blocks(provider: Provider) -> None:
    model = _model(provider)
    caps = provider.capabilities(model)
    assert caps.vision, f"{provider.id} should see images with a vision model"
    declared = [m for m in caps.image_mime_types if m in FORMATS]
    assert declared, f"{provider.id} declares none of PNG/JPEG/WebP"
    for mime in declared:
        data = image_bytes(FORMATS[mime], size=(32, 24))
        part = ImagePart(mime_type=mime, width=32, height=24, data=data)
        request = provider.build_request(_ask(part), model, RequestOptions())
        dumped = json.dumps(request, default=str)
        encoded = base64.b64encode(data).decode()
        assert encoded in dumped or hashlib.sha256(data).hexdigest() in dumped, (provider.id, mime)
        assert not any(encoded in text for text in _text_values(request)), "image pasted into text"


def test_undeclared_image_type_is_refused(provider: Provider) -> None:
    model = _model(provider)
    assert "image/tiff" not in provider.capabilities(model).image_mime_types
    part = ImagePart(mime_type="image/tiff", width=8, height=8, data=image_bytes("TIFF", size=(8, 8)))
    with pytest.raises(UnsupportedPartError):
        provider.build_request(_ask(part), model, RequestOptions())


def test_images_to_a_text_model_are_refused(provider: Provider) -> None:
    model = _model(provider, "text")
    assert provider.capabilities(model).vision is False
    part = ImagePart(mime_type="image/png", width=8, height=8, data=image_bytes("PNG", size=(8, 8)))
    with pytest.raises(UnsupportedPartError):
        provider.build_request(_ask(part), model, RequestOptions())


def test_url_images_follow_url_fetch(provider: Provider) -> None:
    model = _model(provider)
    caps = provider.capabilities(model)
    url = "https://storage.example.com/storage/v1/object/sign/iris/derived/ab/x.png?token=t"
    part = ImagePart(mime_type="image/png", width=8, height=8, url=url)
    if caps.url_fetch == "none":
        with pytest.raises(UnsupportedPartError):
            provider.build_request(_ask(part), model, RequestOptions())
    else:
        assert url in json.dumps(provider.build_request(_ask(part), model, RequestOptions()))


def test_declared_tools_reach_the_request(provider: Provider) -> None:
    model = _model(provider)
    if not provider.capabilities(model).tools:
        pytest.skip(f"{provider.id} declares no tools for {model.model_id}")
    request = provider.build_request(_ask(), model, RequestOptions(tools=(TOOL,)))
    assert "current_time" in json.dumps(request)
