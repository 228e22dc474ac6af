"""Everything else, through LiteLLM: ``litellm.acompletion(..., stream=True)`` with OpenAI-format messages.

LiteLLM translates the OpenAI shapes to and from its 100+ backends (Bedrock, Vertex, Mistral, Groq…),
so requests use the OpenAI mapping (:func:`iris.providers.openai.chat_messages`) and its streamed chunks are
decoded by the same :class:`iris.providers.openai.ChunkDecoder`. LiteLLM is an optional extra
(``iris[litellm]``) imported by :func:`create`, which the registry calls on its loading thread, never
on the event loop: the import takes seconds, and so do the modules LiteLLM imports on its first
completion, which an offline mock completion there imports too. Without the extra this provider fails
to load (listed with the reason), and nothing else breaks. Limits are conservative because LiteLLM's
model map has no numeric image limits and the backend behind a model id is unknown here.

Documents and audio go in the OpenAI shapes (``file`` with ``file_data``, ``input_audio``), only to
``multimodal`` rows whose backend takes them: LiteLLM's map (``supports_pdf_input``,
``supports_audio_input``) unless ``options["pdf"]`` / ``options["audio"]`` say otherwise. LiteLLM itself
drops parts a backend cannot take (Ollama's, Anthropic's audio), so anything else is refused here first.

Reasoning (models LiteLLM's map says reason, or ``options["reasoning"]``): ``reasoning_effort`` goes
through as it is, and Claude models get Anthropic's ``thinking`` with a budget instead; LiteLLM's
``reasoning_content`` and signed ``thinking_blocks`` come back through the shared decoder.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from types import ModuleType
from typing import Any

from iris.providers.errors import ProviderError, ProviderErrorKind
from iris.providers.events import ProviderEvent
from iris.providers.http import require_key
from iris.providers.messages import Message, RequestOptions
from iris.providers.openai import DETAIL, ChunkDecoder, chat_request, could_not_fetch, without_key
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
from iris.providers.vendor_facts import VendorFacts

IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
MIN_THINKING_BUDGET = 1024
MODEL_OPTIONS: Mapping[str, OptionSpec] = {
    "reasoning": REASONING,
    "baseUrl": BASE_URL,
    "apiBase": OptionSpec(type="string", description="older name of baseUrl, read when baseUrl is absent"),
    "apiKeyEnv": API_KEY_ENV,
    "detail": DETAIL,
    "pdf": OptionSpec(type="boolean", description="the backend reads PDFs (overrides LiteLLM's map)"),
    "audio": OptionSpec(type="boolean", description="the backend hears wav/mp3 (overrides LiteLLM's map)"),
}
# The strictest published document caps of its PDF backends (Anthropic, OpenAI: 100 pages, 32 MB).
PDF = DocumentSupport(pdf=True, max_pages=100, max_bytes=32 * 1024 * 1024)
AUDIO = AudioSupport(mime_types=("audio/wav", "audio/mpeg"))
"""``input_audio`` takes wav and mp3, whatever the backend."""
log = logging.getLogger("iris.providers")

# LiteLLM fronts many vendors whose limits differ: the strictest documented one (Gemini's 20 MB request).
MAX_REQUEST_BYTES = 20_000_000


def _litellm() -> ModuleType:
    """LiteLLM, imported now (raises ``ImportError`` when the extra is not installed)."""
    # Must be set before the first import: otherwise LiteLLM downloads its model map (prices and the
    # supports_vision/function_calling flags) from GitHub at import time. The bundled copy keeps start-up
    # offline and capabilities deterministic.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on stdout for each error
    if "LITELLM_LOG" not in os.environ:  # its INFO line per completion, printed twice; unless asked for
        logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    return litellm


def _supports(model_id: str, flag: str) -> bool:
    """A capability flag from LiteLLM's model map; False for unknown models, or without LiteLLM."""
    try:
        return bool(getattr(_litellm(), flag)(model_id))
    except Exception:
        return False


def _declared(model: ModelSpec, option: str, flag: str) -> bool:
    """A multimodal row's ``options[option]``, else LiteLLM's map flag; never for vision or text rows."""
    if model.type != "multimodal":
        return False
    value = model.options.get(option)
    return value is True if value is not None else _supports(model.model_id, flag)


def _reasoning(model: ModelSpec) -> ReasoningSupport:
    """From LiteLLM's model map (``supports_reasoning``), unless ``options["reasoning"]`` says."""
    thinks = model.options.get("reasoning")
    if thinks is None:
        thinks = _supports(model.model_id, "supports_reasoning")
    if thinks is not True:
        return ReasoningSupport()
    claude = "claude" in model.model_id
    return ReasoningSupport(supported=True, streamed=True, encrypted=claude, effort=not claude, budget=claude)


class LiteLLMProvider:
    """LiteLLM's async streaming completion; see the module docstring."""

    id = "litellm"
    spec_version = SPEC_VERSION
    vendor_facts = VendorFacts(pdf_page_tokens=2534)
    """No image formula of its own (a model names one with ``imageCostFormula``); a PDF page counts as
    Anthropic's page does, the larger of the vendors it proxies."""
    model_options = MODEL_OPTIONS

    def __init__(self, context: ProviderContext) -> None:
        self._http = context.http  # unused: LiteLLM brings its own HTTP clients
        self._environ = context.environ

    def key_env(self, model: ModelSpec) -> str | None:
        """The model's ``apiKeyEnv``; without one LiteLLM reads its backend's own variable itself."""
        name = model.options.get("apiKeyEnv")
        return str(name) if name else None

    def capabilities(self, model: ModelSpec) -> Capabilities:
        """Flags from LiteLLM's model map; limits that most vision backends accept (20 MB, 8 images)."""
        vision = model.type != "text" and _supports(model.model_id, "supports_vision")
        return Capabilities(
            vision=vision,
            image_mime_types=IMAGE_MIME_TYPES if vision else (),
            max_images=8 if vision else 0,
            max_image_bytes=20_000_000 if vision else 0,
            image_bytes_measured_on="raw",
            max_image_edge_px=8000 if vision else None,
            recommended_long_edge_px=1568 if vision else None,
            url_fetch="none",
            tools=model.supports_tools and _supports(model.model_id, "supports_function_calling"),
            max_request_bytes=MAX_REQUEST_BYTES if vision else 0,
            reasoning=_reasoning(model),
            parameters=ALL_PARAMETERS,  # LiteLLM maps each to its backend, or refuses it
            documents=PDF if _declared(model, "pdf", "supports_pdf_input") else DocumentSupport(),
            audio=AUDIO if _declared(model, "audio", "supports_audio_input") else AudioSupport(),
        )

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        """The ``litellm.acompletion`` keyword arguments, minus the connection (base URL and key)."""
        # LiteLLM takes max_tokens and renames it per backend.
        caps = self.capabilities(model)
        body = chat_request(messages, model, options, caps, provider=self.id, max_tokens_field="max_tokens")
        if "reasoning_effort" in body and options.reasoning is not None and "claude" in model.model_id:
            del body["reasoning_effort"]  # Anthropic's own knob, with the budget the request names
            budget = max(MIN_THINKING_BUDGET, options.reasoning.budget_tokens or MIN_THINKING_BUDGET)
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return body

    async def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        request = self.build_request(messages, model, options)
        key: str | None = None
        if key_env := self.key_env(model):
            key = require_key(self._environ, key_env, self.id)
            request["api_key"] = key
        if base := model.options.get("baseUrl") or model.options.get("apiBase"):
            request["api_base"] = str(base)
        # The core decides about retries (it has retry_after and the could-not-fetch fallback).
        request.setdefault("max_retries", 0)
        litellm = _litellm()  # imported by create() already
        decoder = ChunkDecoder(self.id)
        try:
            response = await litellm.acompletion(**request)
            async for chunk in response:
                for event in decoder.feed(chunk.model_dump(exclude_none=True)):
                    yield event
        except ProviderError as exc:
            raise without_key(exc, key) from None
        except Exception as exc:
            error = _error_for(litellm, exc, self.id, key)
            if error is None:
                raise
            raise error from None
        if decoder.reason is None:  # LiteLLM normally raises for this itself
            raise ProviderError("unavailable", "the stream ended before a finish reason", provider=self.id)
        for event in decoder.finish():
            yield event


def _error_for(litellm: ModuleType, exc: Exception, provider: str, key: str | None) -> ProviderError | None:
    """The typed error for a LiteLLM exception (``None``: not one of LiteLLM's, let it propagate)."""
    text = str(exc)
    if key:
        text = text.replace(key, "***")
    kind: ProviderErrorKind
    mid_stream = getattr(litellm.exceptions, "MidStreamFallbackError", None)  # a stream cut short
    connection = (litellm.Timeout, litellm.APIConnectionError, *([mid_stream] if mid_stream else []))
    server = (litellm.ServiceUnavailableError, litellm.InternalServerError, litellm.BadGatewayError)
    if isinstance(exc, litellm.ImageFetchError) or (
        isinstance(exc, litellm.BadRequestError) and could_not_fetch(400, text)
    ):
        kind = "could_not_fetch_image"
    elif isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)):
        kind = "auth"
    elif isinstance(exc, litellm.RateLimitError):
        kind = "rate_limit"
    elif isinstance(exc, (litellm.BadRequestError, litellm.NotFoundError, litellm.UnprocessableEntityError)):
        kind = "bad_request"
    elif isinstance(exc, connection + server):
        kind = "unavailable"
    elif isinstance(exc, (litellm.APIError, litellm.OpenAIError)):
        kind = "other"
    else:
        return None
    # LiteLLM reports a 500 for a connection it never made or lost: that is no HTTP status.
    status = None if isinstance(exc, connection) else getattr(exc, "status_code", None)
    return ProviderError(
        kind,
        f"{type(exc).__name__}: {text}"[:500],
        provider=provider,
        status=status if isinstance(status, int) else None,
        retry_after=_retry_after(exc),
    )


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


_warmed = False


def _warm_up(litellm: ModuleType) -> None:
    """One offline streamed completion (``mock_response``: no request leaves), once per process: LiteLLM
    imports about a second of modules on its first completion, which would otherwise be a run's."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    try:
        chunks = litellm.completion(
            model="gpt-4o", messages=[{"role": "user", "content": "."}], mock_response=".", stream=True
        )
        for _ in chunks:
            pass
    except Exception as exc:  # only a warm-up: the first real completion then imports what it needs
        log.debug("LiteLLM warm-up failed: %s", exc)


def create(context: ProviderContext) -> LiteLLMProvider:
    """Entry point (``iris.providers``). Imports LiteLLM (``ImportError`` without the extra: the
    registry lists the provider as failed) and warms it up; see the module docstring."""
    try:
        litellm = _litellm()
    except ImportError as exc:
        raise ImportError(f"LiteLLM is not installed (pip install 'iris[litellm]'): {exc}") from exc
    _warm_up(litellm)
    return LiteLLMProvider(context)
