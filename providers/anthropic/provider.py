"""The Anthropic provider: its options and capabilities, and the one streamed POST to ``/v1/messages``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
import msgspec

from iris.providers import image_formulas
from iris.providers.anthropic.request import ignored_extras, messages_request
from iris.providers.anthropic.stream import Translator, could_not_fetch
from iris.providers.errors import ProviderError
from iris.providers.events import ProviderEvent, Warning
from iris.providers.http import JSON_HEADERS, drain, error_for_status, json_body, require_key, transport_error
from iris.providers.messages import Message, RequestOptions
from iris.providers.options import API_KEY_ENV, BASE_URL, MAX_TOKENS, REASONING, OptionSpec
from iris.providers.spec import (
    SPEC_VERSION,
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

DEFAULT_BASE_URL = "https://api.anthropic.com"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
KEY_ENV = "ANTHROPIC_API_KEY"
API_VERSION = "2023-06-01"

IMAGE_MIME_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
"""5 MB, checked by Anthropic on the base64 text ("image exceeds 5 MB maximum: … > 5242880 bytes")."""
MAX_REQUEST_BYTES = 32_000_000  # "32 MB" per request on the standard endpoints (docs: vision, limits)
PDF = DocumentSupport(pdf=True, max_pages=100, max_bytes=MAX_REQUEST_BYTES)
"""PDF support: "all active models"; 100 pages and the 32 MB request per request (no audio at all)."""
MAX_IMAGES = 100  # 100 for 200k-context models (600 for others): the stricter figure
MAX_IMAGE_EDGE_PX = 8000
RECOMMENDED_LONG_EDGE_PX = 1568  # above this Anthropic downscales anyway, so sending more is waste

MODEL_OPTIONS: Mapping[str, OptionSpec] = {
    "reasoning": REASONING,
    "baseUrl": BASE_URL,
    "apiKeyEnv": API_KEY_ENV,
    "maxTokens": MAX_TOKENS,
    "structuredOutputs": OptionSpec(
        type="boolean",
        description="whether this model takes a JSON schema for its answer (output_config.format); "
        "overrides what the provider infers from its name",
    ),
    "urlFetch": OptionSpec(
        type="string",
        description='"none" sends images inline only (Claude behind gateways that take base64 only)',
        choices=("none", "public_https"),
    ),
}

_THINKING_MODELS = re.compile(r"claude-(3-7-sonnet|(sonnet|opus|haiku)-[4-9])")
"""Claude models with extended thinking (3.7 Sonnet, and the 4.x families and later)."""
_STRUCTURED_MODELS = re.compile(r"claude-((sonnet|opus|haiku)-4-[5-9]|[a-z]+-[5-9]|mythos)")
"""Claude models that take a JSON schema for the answer (``output_config.format``): Sonnet, Opus and
Haiku 4.5 and later, and the families after 4 (Anthropic's structured outputs guide)."""


PARAMETERS = ParameterSupport(
    temperature=True,
    top_p=True,
    stop=True,
    max_output_tokens=True,
    tool_choice=True,
    parallel_tool_calls=True,
)
"""What the Messages API takes: no ``seed`` and no free-form JSON mode (``json_object``); a JSON schema
(``json_schema``) where the model takes one (:func:`parameters`)."""


def parameters(model: ModelSpec) -> ParameterSupport:
    """:data:`PARAMETERS`, with ``json_schema`` for a model that takes structured outputs (by its name,
    unless ``options["structuredOutputs"]`` says otherwise)."""
    structured = model.options.get("structuredOutputs", bool(_STRUCTURED_MODELS.search(model.model_id)))
    return msgspec.structs.replace(PARAMETERS, json_schema=structured is True)


class AnthropicProvider:
    """Claude models over the Messages API, streamed."""

    id = "anthropic"
    spec_version = SPEC_VERSION
    vendor_facts = VendorFacts(
        image_formula=image_formulas.ANTHROPIC, pdf_page_tokens=2534, telemetry_name="anthropic"
    )
    """Anthropic's image formula; a PDF page is sent as an image beside its text, so a US Letter page by that
    formula (1212x1568 px / 750) — a floor, since the page's text comes on top."""
    model_options = MODEL_OPTIONS

    def __init__(self, context: ProviderContext) -> None:
        self._http = context.http
        self._environ = context.environ

    # -- SPI -----------------------------------------------------------------------------------------

    def key_env(self, model: ModelSpec) -> str:
        """``ANTHROPIC_API_KEY``, or the model's ``apiKeyEnv``."""
        return str(model.options.get("apiKeyEnv") or KEY_ENV)

    def capabilities(self, model: ModelSpec) -> Capabilities:
        """Limits from Anthropic's vision guide; ``options["urlFetch"]`` may turn URL delivery off
        (Claude behind Bedrock/Vertex-style gateways takes base64 only). Thinking by model family,
        unless ``options["reasoning"]`` says otherwise."""
        thinks = model.options.get("reasoning", bool(_THINKING_MODELS.search(model.model_id)))
        reasoning = (
            ReasoningSupport(supported=True, streamed=True, encrypted=True, budget=True)
            if thinks is True
            else ReasoningSupport()
        )
        if model.type == "text":
            return Capabilities(
                vision=False, tools=model.supports_tools, reasoning=reasoning, parameters=parameters(model)
            )
        url_fetch: UrlFetch = "none" if model.options.get("urlFetch") == "none" else "public_https"
        return Capabilities(
            vision=True,
            image_mime_types=IMAGE_MIME_TYPES,
            max_images=MAX_IMAGES,
            max_image_bytes=MAX_IMAGE_BASE64_BYTES,
            image_bytes_measured_on="base64",
            max_image_edge_px=MAX_IMAGE_EDGE_PX,
            recommended_long_edge_px=RECOMMENDED_LONG_EDGE_PX,
            url_fetch=url_fetch,
            tools=model.supports_tools,
            max_request_bytes=MAX_REQUEST_BYTES,
            reasoning=reasoning,
            parameters=parameters(model),
            tool_result_images="native",  # image blocks inside tool_result content
            documents=PDF if model.type == "multimodal" else DocumentSupport(),
        )

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        """The Messages API body. Pure: same input, same dict."""
        return messages_request(messages, model, options, self.capabilities(model), provider=self.id)

    async def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        """POST the request and translate Anthropic's SSE events into neutral events."""
        key = require_key(self._environ, self.key_env(model), self.id)
        body = self.build_request(messages, model, options)
        ignored = ignored_extras(options, self.id)
        if ignored:
            yield Warning(kind="unsupported", message=f"ignored anthropic options: {', '.join(ignored)}")
        headers = {
            "x-api-key": key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream",
        }
        try:
            async with self._http.stream(
                "POST",
                f"{self._base_url(model)}/v1/messages",
                content=json_body(body),
                headers={**headers, **JSON_HEADERS},
            ) as response:
                if not response.is_success:
                    text = (await response.aread()).decode("utf-8", "replace")
                    raise error_for_status(self.id, response, text, could_not_fetch=could_not_fetch)
                translator = Translator(self.id)
                frames = server_sent_events(response, self.id)
                async for sse in frames:
                    events = translator.feed(sse.event, sse.data)
                    if translator.done:
                        await drain(frames)  # the connection goes back to the pool
                    for event in events:
                        yield event
                    if translator.done:
                        return
        except httpx.HTTPError as exc:
            raise transport_error(self.id, exc) from exc
        raise ProviderError("unavailable", "the stream ended before message_stop", provider=self.id)

    # -- helpers -------------------------------------------------------------------------------------

    def _base_url(self, model: ModelSpec) -> str:
        base = model.options.get("baseUrl") or self._environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
        return str(base).rstrip("/")


def create(context: ProviderContext) -> AnthropicProvider:
    return AnthropicProvider(context)
