"""The OpenAI provider: its options and capabilities, and the one streamed POST to ``/chat/completions``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx

from iris.providers import image_formulas
from iris.providers.errors import ProviderError
from iris.providers.events import ProviderEvent
from iris.providers.http import (
    JSON_HEADERS,
    chunk_json,
    drain,
    error_for_status,
    json_body,
    require_key,
    transport_error,
)
from iris.providers.messages import Message, RequestOptions
from iris.providers.openai.request import chat_request
from iris.providers.openai.stream import ChunkDecoder, could_not_fetch, without_key
from iris.providers.options import API_KEY_ENV, BASE_URL, REASONING, OptionSpec
from iris.providers.spec import (
    ALL_PARAMETERS,
    SPEC_VERSION,
    AudioSupport,
    Capabilities,
    DocumentSupport,
    ModelSpec,
    ProviderContext,
    ReasoningSupport,
)
from iris.providers.sse import server_sent_events
from iris.providers.vendor_facts import VendorFacts

DEFAULT_BASE_URL = "https://api.openai.com/v1"
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
# "50 MB of image bytes per request" (the older Images and Vision guide; the current one is quoted at
# 512 MB): the stricter figure, applied to the whole body.
MAX_REQUEST_BYTES = 50_000_000
KEY_ENV = "OPENAI_API_KEY"
DETAIL = OptionSpec(
    type="string", description="image detail OpenAI-style servers look at", choices=("auto", "low", "high")
)
MODEL_OPTIONS: Mapping[str, OptionSpec] = {
    "reasoning": REASONING,
    "baseUrl": BASE_URL,
    "apiKeyEnv": API_KEY_ENV,
    "noKey": OptionSpec(type="boolean", description="send no Authorization header (local servers)"),
    "detail": DETAIL,
    "maxTokensField": OptionSpec(
        type="string",
        description="the body field for the output limit (older compatible servers want max_tokens)",
        choices=("max_completion_tokens", "max_tokens"),
    ),
    "audio": OptionSpec(type="boolean", description="the model hears audio (input_audio; wav and mp3)"),
    "pdf": OptionSpec(type="boolean", description="a multimodal model reads PDF file parts (default true)"),
}
# "up to 100 pages and 32MB of total content in a single request, across multiple file inputs" (the
# file-inputs guide, as quoted in 2025): read by vision models "such as gpt-4o and later".
PDF = DocumentSupport(pdf=True, max_pages=100, max_bytes=32 * 1024 * 1024)
# input_audio takes wav and mp3 only; no duration limit is published.
AUDIO = AudioSupport(mime_types=("audio/wav", "audio/mpeg"))
_AUDIO_MODELS = re.compile(r"audio")
"""OpenAI's audio-input models by name: gpt-audio…, gpt-4o-audio-preview, gpt-4o-mini-audio…"""
_REASONING_MODELS = re.compile(r"^(o\d|gpt-5)")
"""OpenAI's reasoning models: the o-series and GPT-5."""


def reasoning_support(model: ModelSpec, *, streamed: bool) -> ReasoningSupport:
    """Reasoning by model name, unless ``options["reasoning"]`` says otherwise."""
    thinks = model.options.get("reasoning", bool(_REASONING_MODELS.match(model.model_id)))
    if thinks is not True:
        return ReasoningSupport()
    return ReasoningSupport(supported=True, streamed=streamed, effort=True)


class OpenAIProvider:
    """Chat Completions over SSE; see the package docstring."""

    id = "openai"
    spec_version = SPEC_VERSION
    vendor_facts = VendorFacts(
        image_formula=image_formulas.OPENAI, pdf_page_tokens=765, telemetry_name="openai"
    )
    """OpenAI's image formula; a PDF page is sent as an image beside its text, so a US Letter page by that
    formula (768x994 px at high detail, 4 tiles) — a floor, since the page's text comes on top."""
    model_options = MODEL_OPTIONS

    def __init__(self, context: ProviderContext) -> None:
        self._http = context.http
        self._environ = context.environ

    def key_env(self, model: ModelSpec) -> str | None:
        """``OPENAI_API_KEY``, or the model's ``apiKeyEnv``; none with ``noKey``."""
        if model.options.get("noKey"):
            return None
        return str(model.options.get("apiKeyEnv") or KEY_ENV)

    def capabilities(self, model: ModelSpec) -> Capabilities:
        """From OpenAI's (older, stricter) vision guide: 20 MB per image, 500 images, fitted to 2048 px.
        A ``multimodal`` model reads PDFs too, and hears audio when its name says so (or ``audio``)."""
        vision = model.type != "text"
        multimodal = model.type == "multimodal"
        hears = multimodal and model.options.get("audio", bool(_AUDIO_MODELS.search(model.model_id))) is True
        return Capabilities(
            vision=vision,
            image_mime_types=IMAGE_MIME_TYPES if vision else (),
            max_images=500 if vision else 0,
            max_image_bytes=20_000_000 if vision else 0,
            image_bytes_measured_on="raw",
            max_image_edge_px=None,
            recommended_long_edge_px=2048 if vision else None,
            url_fetch="public_https",
            tools=model.supports_tools,
            max_request_bytes=MAX_REQUEST_BYTES if vision else 0,
            # OpenAI streams no reasoning text here; a compatible server that does declares reasoning.
            reasoning=reasoning_support(model, streamed="reasoning" in model.options),
            parameters=ALL_PARAMETERS,
            documents=PDF if multimodal and model.options.get("pdf", True) is True else DocumentSupport(),
            audio=AUDIO if hears else AudioSupport(),
        )

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        # OpenAI renamed max_tokens (reasoning models reject it); older compatible servers want it.
        tokens_field = str(model.options.get("maxTokensField", "max_completion_tokens"))
        return chat_request(
            messages,
            model,
            options,
            self.capabilities(model),
            provider=self.id,
            max_tokens_field=tokens_field,
        )

    async def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        body = self.build_request(messages, model, options)
        headers = {"Accept": "text/event-stream"}
        key: str | None = None
        if key_env := self.key_env(model):
            key = require_key(self._environ, key_env, self.id)
            headers["Authorization"] = f"Bearer {key}"
        url = f"{self._base_url(model)}/chat/completions"
        decoder = ChunkDecoder(self.id)
        try:
            async with self._http.stream(
                "POST", url, content=json_body(body), headers={**headers, **JSON_HEADERS}
            ) as response:
                if not response.is_success:
                    text = (await response.aread()).decode("utf-8", "replace")
                    raise error_for_status(self.id, response, text, could_not_fetch=could_not_fetch)
                frames = server_sent_events(response, self.id)
                async for sse in frames:
                    if sse.data == "[DONE]":
                        await drain(frames)  # the connection goes back to the pool
                        for event in decoder.finish():
                            yield event
                        return
                    if not sse.data:
                        continue
                    try:
                        events = decoder.feed(chunk_json(sse.data))
                    except (ValueError, TypeError, AttributeError):  # not JSON, or not a chunk's shape
                        raise ProviderError(
                            "unavailable", "malformed chunk in the stream", provider=self.id
                        ) from None
                    for event in events:
                        yield event
        except httpx.HTTPError as exc:
            raise transport_error(self.id, exc) from exc
        except ProviderError as exc:
            raise without_key(exc, key) from None
        raise ProviderError("unavailable", "the stream ended before data: [DONE]", provider=self.id)

    def _base_url(self, model: ModelSpec) -> str:
        base = model.options.get("baseUrl") or self._environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        return str(base).rstrip("/")


def create(context: ProviderContext) -> OpenAIProvider:
    """Entry point (``iris.providers``)."""
    return OpenAIProvider(context)
