"""Request building per vendor: 4 images of ~5 MB each, first turn (normalise) and cached second turn.

For each built-in vendor it prints
- first-turn time (normalise from the originals, build the request, encode the JSON body) and the
  cached second turn (variants from storage), with the speed-up (target: >= 10x);
- peak extra Python memory while building and encoding the body from the variants, against the
  encoded payload size (target: <= 3x);
- the same build done by LiteLLM's own translation for that vendor (from OpenAI-format messages with
  data URLs of the same variants, encoded with json.dumps as its HTTP path does), with our/LiteLLM
  ratios for time and memory.
Pillow's own pixel buffers are not seen by tracemalloc; the memory figure is the request building.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import io
import json
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
from _results import Results
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM: use the bundled model map, offline

from iris.app.media.pipeline import ImageDelivery, ImageRef, image_budget  # noqa: E402
from iris.app.media.variants import VariantCache  # noqa: E402
from iris.app.storage.local import LocalStorage  # noqa: E402
from iris.providers import ImagePart, Message, ModelSpec, Provider, ProviderContext, RequestOptions, TextPart  # noqa: E402
from iris.providers.http import json_body  # noqa: E402
from iris.providers.registry import ProviderRegistry  # noqa: E402

VENDORS = {
    "openai": "gpt-4o",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
    "ollama": "llava",
}
IMAGES = 4
IMAGE_BYTES = 5 * 1024 * 1024 - 64 * 1024


def noise_png(seed: int) -> bytes:
    side = int((IMAGE_BYTES / 3) ** 0.5)
    pixels = hashlib.shake_256(str(seed).encode()).digest(side * side * 3)
    while True:
        buffer = io.BytesIO()
        Image.frombytes("RGB", (side, side), pixels[: side * side * 3]).save(buffer, "PNG", compress_level=1)
        if buffer.tell() <= 5 * 1024 * 1024:
            return buffer.getvalue()
        side -= 16


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


def measure(build: Callable[[], bytes]) -> tuple[float, int, int]:
    """(seconds, peak extra bytes, payload bytes) of one build-and-encode."""
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    body = build()
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak, len(body)


def litellm_builder(vendor: str, model_id: str, openai_messages: list[dict[str, Any]]) -> Callable[[], bytes]:
    from litellm.llms.vertex_ai.gemini.transformation import _gemini_convert_messages_with_history
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    messages: Any = openai_messages  # LiteLLM types them as its TypedDicts; the shapes are the same
    if vendor == "gemini":
        return lambda: json.dumps(
            {"contents": _gemini_convert_messages_with_history(messages=messages)}
        ).encode()
    name = {"ollama": "ollama_chat"}.get(vendor, vendor)
    config = ProviderConfigManager.get_provider_chat_config(model=model_id, provider=LlmProviders(name))
    assert config is not None

    def build() -> bytes:
        body = config.transform_request(
            model=model_id, messages=messages, optional_params={}, litellm_params={}, headers={}
        )
        return json.dumps(body).encode()

    return build


def openai_format(messages: list[Message]) -> list[dict[str, Any]]:
    """The same user turn as OpenAI-format messages with data URLs: what LiteLLM takes in."""
    content: list[dict[str, Any]] = []
    for part in messages[0].parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart) and part.data is not None:
            url = f"data:{part.mime_type};base64,{base64.b64encode(part.data).decode()}"
            content.append({"type": "image_url", "image_url": {"url": url}})
    return [{"role": "user", "content": content}]


PROMPT = "Compare these."


async def bench_vendor(
    provider: Provider, model: ModelSpec, originals: list[bytes], tmp: Path, results: Results
) -> str:
    caps = provider.capabilities(model)
    storage = LocalStorage(tmp, "iris", public_url="http://127.0.0.1:8000", secret="s" * 40)
    refs = []
    for i, data in enumerate(originals):
        path = f"agent-inputs/bench/t/uploads/{i}.png"
        await storage.put(path, _once(data), content_type="image/png")
        refs.append(ImageRef(path=path, mime_type="image/png", sha256=hashlib.sha256(data).hexdigest()))
    cache = VariantCache(storage, anyio.CapacityLimiter(2))
    delivery = ImageDelivery(cache, storage_publicly_reachable=False, url_ttl_seconds=60)

    def encode(messages: list[Message]) -> bytes:  # exactly what the built-in providers put on the wire
        return json_body(provider.build_request(messages, model, RequestOptions()))

    async def turn() -> tuple[float, list[Message]]:
        start = time.perf_counter()
        budget = image_budget(caps, len(PROMPT))  # the vendor's whole-request limit, as a run applies it
        parts = await delivery.parts(refs, caps, by_url=False, budget=budget)
        messages = [Message(role="user", parts=(TextPart(text=PROMPT), *parts))]
        encode(messages)
        return time.perf_counter() - start, messages

    first, _ = await turn()
    second, messages = await turn()
    assert cache.hits == cache.misses >= IMAGES  # turn 2 reads every variant turn 1 made
    seconds, peak, payload = measure(lambda: encode(messages))
    their_seconds, their_peak, _ = measure(
        litellm_builder(provider.id, model.model_id, openai_format(messages))
    )
    for name, value, unit in [
        ("turn1", first, "s"),
        ("turn2", second, "s"),
        ("payload", payload / 1e6, "MB"),
        ("request_limit", caps.max_request_bytes / 1e6, "MB"),
        ("peak_memory", peak / 1e6, "MB"),
        ("litellm_time_ratio", seconds / their_seconds, "x"),
        ("litellm_memory_ratio", peak / their_peak, "x"),
    ]:
        results.figure(f"{provider.id}_{name}", value, unit)
    results.figure(
        f"{provider.id}_turn2_speedup", first / second, "x", target=">= 10", met=first / second >= 10
    )
    results.figure(
        f"{provider.id}_memory_over_payload", peak / payload, "x", target="<= 3", met=peak / payload <= 3
    )
    return (
        f"{provider.id:10} {first:7.2f}s {second:7.3f}s {first / second:7.0f}x {payload / 1e6:7.1f}MB"
        f" {caps.max_request_bytes / 1e6 or float('inf'):6.0f}MB"
        f" {peak / 1e6:7.1f}MB {peak / payload:10.2f}x"
        f" {their_seconds:8.3f}s {seconds / their_seconds:9.2f}x {peak / their_peak:8.2f}x"
    )


async def main() -> None:
    originals = [noise_png(i) for i in range(IMAGES)]
    print(f"{IMAGES} PNG originals, {sum(len(o) for o in originals) / 1e6:.1f} MB in all\n")
    print(
        f"{'vendor':10} {'turn 1':>8} {'turn 2':>8} {'x faster':>8} {'payload':>9} {'limit':>8}"
        f" {'peak mem':>9} {'mem/payload':>11} {'litellm':>9} {'time ratio':>10} {'mem ratio':>9}"
    )
    results = Results("vendor_requests")
    async with httpx.AsyncClient() as http:
        registry = ProviderRegistry(ProviderContext(environ={}, http=http))
        for vendor, model_id in VENDORS.items():
            model = ModelSpec(provider=vendor, model_id=model_id, type="vision")
            with tempfile.TemporaryDirectory() as tmp:
                print(
                    await bench_vendor(registry.get(vendor), model, originals, Path(tmp), results), flush=True
                )
    print("\ntargets: turn 2 >= 10x faster than turn 1; peak memory <= 3x the payload")
    print("time/mem ratio = Iris / LiteLLM for the same request (< 1: Iris is faster / leaner)")
    results.write()


if __name__ == "__main__":
    asyncio.run(main())
