"""The Gemini provider: its options and capabilities, and the one streamed ``streamGenerateContent`` POST."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from iris.providers import image_formulas
from iris.providers.errors import ProviderError
from iris.providers.events import ProviderEvent, Warning
from iris.providers.gemini.names import model_name, parse_version, takes_external_urls
from iris.providers.gemini.request import generate_content_request, ignored_extras
from iris.providers.gemini.stream import Translator, status_error
from iris.providers.http import JSON_HEADERS, drain, json_body, require_key, transport_error
from iris.providers.messages import Message, RequestOptions
from iris.providers.options import API_KEY_ENV, BASE_URL, MAX_TOKENS, REASONING, OptionSpec
from iris.providers.spec import (
    SPEC_VERSION,
    AudioSupport,
    Capabilities,
    DocumentSupport,
    ModelSpec,
    ParameterSupport,
    ProviderContext,
    ReasoningSupport,
    UrlFetch,
)
from iris.providers.sse import server_sent_events
from iris.providers.vendor_facts import VendorFacts

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
PDF = DocumentSupport(pdf=True, max_pages=1000, max_bytes=50 * 1024 * 1024)
"""Document processing: up to 1,000 pages; inline PDFs "limited to 50MB" (file-input methods)."""
AUDIO = AudioSupport(
    mime_types=("audio/wav", "audio/mpeg", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac"),
    max_seconds=9.5 * 3600,
)
"""The audio guide's formats, and its "9.5 hours" of audio in one prompt."""
BASE_URL_ENV = "GEMINI_BASE_URL"
KEY_ENV = "GEMINI_API_KEY"

IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif")
MAX_INLINE_BYTES = 20 * 1024 * 1024
# "If your total request, including files and instructions, exceeds 20MB, use the File API"
# (ai.google.dev/gemini-api/docs/image-understanding): inline data shares one 20 MB request.
MAX_REQUEST_BYTES = 20_000_000
"""Inline data had to keep the whole request under 20 MB (Files API beyond): the per-image ceiling."""
MAX_IMAGES = 900  # no Gemini API figure is published; Vertex lists 3,000 (2.5) and 900 (3 Pro): the stricter

MODEL_OPTIONS: Mapping[str, OptionSpec] = {
    "reasoning": REASONING,
    "baseUrl": BASE_URL,
    "apiKeyEnv": API_KEY_ENV,
    "maxTokens": MAX_TOKENS,
    "urlFetch": OptionSpec(
        type="string",
        description="whether the model fetches image URLs itself (default: by model generation)",
        choices=("none", "public_https"),
    ),
}


PARAMETERS = ParameterSupport(
    temperature=True,
    top_p=True,
    stop=True,
    seed=True,
    max_output_tokens=True,
    json_object=True,
    json_schema=True,
    tool_choice=True,
)
"""``generationConfig`` and ``toolConfig`` take all but ``parallel_tool_calls``."""


class GeminiProvider:
    """Gemini models over the Generative Language API, streamed."""

    id = "gemini"
    spec_version = SPEC_VERSION
    vendor_facts = VendorFacts(
        image_formula=image_formulas.GEMINI,
        pdf_page_tokens=258,
        audio_second_tokens=32,
        telemetry_name="gcp.gemini",
    )
    """Gemini's image formula, its published 258 tokens per PDF page and 32 per second of audio; the Gemini
    API is ``gcp.gemini`` in the GenAI conventions."""
    model_options = MODEL_OPTIONS

    def __init__(self, context: ProviderContext) -> None:
        self._http = context.http
        self._environ = context.environ

    # -- SPI -----------------------------------------------------------------------------------------

    def key_env(self, model: ModelSpec) -> str:
        """``GEMINI_API_KEY``, or the model's ``apiKeyEnv``."""
        return str(model.options.get("apiKeyEnv") or KEY_ENV)

    def capabilities(self, model: ModelSpec) -> Capabilities:
        """URL delivery only where the model fetches external URLs; ``options["urlFetch"]`` overrides.
        Thinking from 2.5 on (a budget for 2.5, a level for 3.x), unless ``options["reasoning"]`` says."""
        version = parse_version(model_name(model))
        thinks = model.options.get("reasoning", version is not None and version >= (2, 5))
        reasoning = (
            ReasoningSupport(
                supported=True,
                streamed=True,
                encrypted=True,
                effort=version is not None and version >= (3, 0),
                budget=version is None or version < (3, 0),
            )
            if thinks is True
            else ReasoningSupport()
        )
        if model.type == "text":
            return Capabilities(
                vision=False, tools=model.supports_tools, reasoning=reasoning, parameters=PARAMETERS
            )
        configured = model.options.get("urlFetch")
        url_fetch: UrlFetch
        if configured in ("none", "public_https"):
            url_fetch = "none" if configured == "none" else "public_https"
        else:
            url_fetch = "public_https" if takes_external_urls(model_name(model)) else "none"
        return Capabilities(
            vision=True,
            image_mime_types=IMAGE_MIME_TYPES,
            max_images=MAX_IMAGES,
            max_image_bytes=MAX_INLINE_BYTES,
            image_bytes_measured_on="raw",
            max_image_edge_px=None,  # none documented: Gemini scales and tiles
            recommended_long_edge_px=None,
            url_fetch=url_fetch,
            tools=model.supports_tools,
            max_request_bytes=MAX_REQUEST_BYTES,
            reasoning=reasoning,
            parameters=PARAMETERS,
            # Function responses carry parts (inline images) from Gemini 3 on; older models see them in a
            # user turn after the response.
            tool_result_images="native" if version is not None and version >= (3, 0) else "user_message",
            documents=PDF if model.type == "multimodal" else DocumentSupport(),
            audio=AUDIO if model.type == "multimodal" else AudioSupport(),
        )

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        """The ``GenerateContentRequest`` body. Pure: same input, same dict."""
        return generate_content_request(messages, model, options, self.capabilities(model), provider=self.id)

    async def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        """POST the request and translate the ``GenerateContentResponse`` chunks into neutral events."""
        key = require_key(self._environ, self.key_env(model), self.id)
        body = self.build_request(messages, model, options)
        ignored = ignored_extras(options, self.id)
        if ignored:
            yield Warning(kind="unsupported", message=f"ignored gemini options: {', '.join(ignored)}")
        url = (
            f"{self._base_url(model)}/v1beta/models/{quote(model_name(model), safe='-._')}"
            ":streamGenerateContent?alt=sse"
        )
        headers = {"x-goog-api-key": key, "content-type": "application/json", "accept": "text/event-stream"}
        try:
            async with self._http.stream(
                "POST", url, content=json_body(body), headers={**headers, **JSON_HEADERS}
            ) as response:
                if not response.is_success:
                    text = (await response.aread()).decode("utf-8", "replace")
                    raise status_error(self.id, response, text)
                translator = Translator(self.id)
                frames = server_sent_events(response, self.id)
                async for sse in frames:
                    events = translator.feed(sse.data)
                    if translator.done:
                        await drain(frames)  # the connection goes back to the pool
                    for event in events:
                        yield event
                    if translator.done:
                        return
        except httpx.HTTPError as exc:
            raise transport_error(self.id, exc) from exc
        raise ProviderError("unavailable", "the stream ended without a finishReason", provider=self.id)

    # -- helpers -------------------------------------------------------------------------------------

    def _base_url(self, model: ModelSpec) -> str:
        base = model.options.get("baseUrl") or self._environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
        return str(base).rstrip("/")


def create(context: ProviderContext) -> GeminiProvider:
    return GeminiProvider(context)
