"""Google's Gemini API: ``POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse``.

Images go as ``inlineData`` (base64) or ``fileData`` (a URL Google fetches, on models that take
external URLs), tools as ``functionDeclarations``, calls and results as ``functionCall`` /
``functionResponse`` parts. The key travels in the ``x-goog-api-key`` header, never in the URL, so it
cannot leak through logged URLs. The SSE stream has no end sentinel: a chunk with ``finishReason``
ends it. Gemini has no call ids, so the stream makes deterministic ones and results go back by name.

Thinking: asked to reason, ``generationConfig.thinkingConfig`` asks for ``includeThoughts`` with a
``thinkingBudget`` (2.5) or a ``thinkingLevel`` (3.x); ``thought: true`` parts stream as reasoning.
A ``thoughtSignature`` on a ``functionCall`` part is kept for that call and sent back on it, byte for
byte, in every later request (Gemini 3 refuses a replayed call without it).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import EventSource

from providers.checks import check_image, check_tools, part_kind, tool_arguments
from providers.errors import ProviderError, ProviderErrorKind, UnsupportedPartError
from providers.events import (
    Finish,
    FinishReason,
    ProviderEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningOpaque,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    Warning,
)
from providers.http import (
    JSON_HEADERS,
    b64,
    drain,
    error_for_status,
    json_body,
    require_key,
    transport_error,
)
from providers.messages import (
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from providers.options import API_KEY_ENV, BASE_URL, MAX_TOKENS, REASONING, OptionSpec
from providers.spec import (
    SPEC_VERSION,
    Capabilities,
    ModelSpec,
    ProviderContext,
    ReasoningSupport,
    UrlFetch,
)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
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

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented stand-in for a ``thoughtSignature`` the history no longer has. Gemini 3 answers
400 to a replayed ``functionCall`` without one, and ``ToolCallPart`` cannot carry the real signature."""

EXTRA_GENERATION_CONFIG = ("topP", "topK", "stopSequences", "mediaResolution", "thinkingConfig")
EXTRA_TOP_LEVEL = ("safetySettings",)
"""``RequestOptions.extra["gemini"]`` keys copied as they are (into ``generationConfig`` or the body)."""

_FINISH_REASONS: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
}
_STATUS_KINDS: dict[str, ProviderErrorKind] = {
    "UNAUTHENTICATED": "auth",
    "PERMISSION_DENIED": "auth",
    "RESOURCE_EXHAUSTED": "rate_limit",
    "INVALID_ARGUMENT": "bad_request",
    "FAILED_PRECONDITION": "bad_request",
    "NOT_FOUND": "bad_request",
    "UNAVAILABLE": "unavailable",
    "INTERNAL": "unavailable",
    "DEADLINE_EXCEEDED": "unavailable",
}
_FETCH_FAILED = re.compile(
    r"(invalid or unsupported file uri|unsupported file uri|cannot fetch content"
    r"|\b(unable|failed|could not) to (fetch|download))",
    re.IGNORECASE,
)
_SIGNED_QUERY = re.compile(r"(https?://[^\s?\"'\\]+)\?[^\s\"'\\]*")
_VERSION = re.compile(r"gemini-(\d+)(?:\.(\d+))?")
_LEGACY = ("gemini-pro", "gemini-pro-vision", "gemini-ultra")  # the 1.0 names without a number
_ALLOWED_PARTS: dict[str, tuple[type, ...]] = {
    "system": (TextPart,),
    "user": (TextPart, ImagePart),
    "assistant": (ReasoningPart, TextPart, ToolCallPart),
    "tool": (ToolResultPart,),
}


def _model_name(model: ModelSpec) -> str:
    return model.model_id.removeprefix("models/")


def _version(name: str) -> tuple[int, int] | None:
    match = _VERSION.match(name)
    return (int(match[1]), int(match[2] or 0)) if match else None


def takes_external_urls(name: str) -> bool:
    """Public https ``fileUri`` works on current Gemini models, not on 1.x or 2.0 (nor on non-Gemini
    models such as Gemma); a name without a version (``gemini-flash-latest``) is a current alias."""
    if not name.startswith("gemini-") or name in _LEGACY:
        return False
    version = _version(name)
    return version is None or version >= (2, 5)


def _error_object(body: str) -> dict[str, Any]:
    """``{"error": {"code", "message", "status", "details"}}`` (or a one-element list of it) → inner."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    if isinstance(parsed, list) and parsed:
        parsed = parsed[0]
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) else {}


def could_not_fetch(status: int, body: str) -> bool:
    """Google's 400 ``INVALID_ARGUMENT`` for a ``fileUri`` it would not or could not fetch ("Invalid or
    unsupported file uri: …", "Cannot fetch content from the provided URL.")."""
    if status != 400:
        return False
    error = _error_object(body)
    return bool(_FETCH_FAILED.search(str(error.get("message", "")) if error else body))


def _reasons(error: Mapping[str, Any]) -> set[str]:
    details = error.get("details")
    return (
        {str(d.get("reason")) for d in details if isinstance(d, dict) and d.get("reason")}
        if isinstance(details, list)
        else set()
    )


def _retry_delay(error: Mapping[str, Any]) -> float | None:
    """``RetryInfo.retryDelay`` ("37s") from a 429 body: Google often sends no ``retry-after``."""
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            delay = str(detail.get("retryDelay", ""))
            try:
                return float(delay.removesuffix("s"))
            except ValueError:
                return None
    return None


class GeminiProvider:
    """Gemini models over the Generative Language API, streamed."""

    id = "gemini"
    spec_version = SPEC_VERSION
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
        version = _version(_model_name(model))
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
            return Capabilities(vision=False, tools=model.supports_tools, reasoning=reasoning)
        configured = model.options.get("urlFetch")
        url_fetch: UrlFetch
        if configured in ("none", "public_https"):
            url_fetch = "none" if configured == "none" else "public_https"
        else:
            url_fetch = "public_https" if takes_external_urls(_model_name(model)) else "none"
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
        )

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        """The ``GenerateContentRequest`` body. Pure: same input, same dict."""
        caps = self.capabilities(model)
        version = _version(_model_name(model))
        sign_calls = version is not None and version >= (3, 0)
        system_texts = [options.system] if options.system else []
        contents: list[dict[str, Any]] = []
        last_kind = ""
        for message in messages:
            for part in message.parts:
                if not isinstance(part, _ALLOWED_PARTS[message.role]):
                    raise UnsupportedPartError(
                        self.id, part_kind(part), reason=f"not valid in a {message.role} message"
                    )
            if message.role == "system":
                system_texts.extend(p.text for p in message.parts if isinstance(p, TextPart) and p.text)
                continue
            signatures = {
                part.tool_call_id: part.signature
                for part in message.parts
                if isinstance(part, ReasoningPart) and part.provider == self.id and part.tool_call_id
            }
            parts = [
                p for part in message.parts if (p := self._part(part, model, caps, sign_calls, signatures))
            ]
            if not parts:
                continue
            # Results of parallel calls must share one turn; a user's text stays a turn of its own.
            if contents and last_kind == message.role:
                contents[-1]["parts"].extend(parts)
            else:
                contents.append({"role": "model" if message.role == "assistant" else "user", "parts": parts})
            last_kind = message.role

        body: dict[str, Any] = {"contents": contents}
        if system_texts:
            body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system_texts)}]}
        if options.tools:
            check_tools(options.tools, caps, provider=self.id, model_id=model.model_id)
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
                        for t in options.tools
                    ]
                }
            ]
        extra = self._extra(options)
        config: dict[str, Any] = {}
        max_tokens = self._max_tokens(model, options)
        if max_tokens is not None:
            config["maxOutputTokens"] = max_tokens
        if options.temperature is not None:
            config["temperature"] = options.temperature
        if options.reasoning is not None and caps.reasoning.supported:
            thinking: dict[str, Any] = {"includeThoughts": True}
            if caps.reasoning.effort:
                thinking["thinkingLevel"] = "low" if options.reasoning.effort == "low" else "high"
            elif options.reasoning.budget_tokens is not None:
                thinking["thinkingBudget"] = options.reasoning.budget_tokens
            config["thinkingConfig"] = thinking
        config.update((k, v) for k, v in extra.items() if k in EXTRA_GENERATION_CONFIG)
        if config:
            body["generationConfig"] = config
        body.update((k, v) for k, v in extra.items() if k in EXTRA_TOP_LEVEL)
        return body

    async def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        """POST the request and translate the ``GenerateContentResponse`` chunks into neutral events."""
        key = require_key(self._environ, self.key_env(model), self.id)
        body = self.build_request(messages, model, options)
        known = (*EXTRA_GENERATION_CONFIG, *EXTRA_TOP_LEVEL)
        ignored = sorted(k for k in self._extra(options) if k not in known)
        if ignored:
            yield Warning(kind="unsupported", message=f"ignored gemini options: {', '.join(ignored)}")
        url = (
            f"{self._base_url(model)}/v1beta/models/{quote(_model_name(model), safe='-._')}"
            ":streamGenerateContent?alt=sse"
        )
        headers = {"x-goog-api-key": key, "content-type": "application/json", "accept": "text/event-stream"}
        try:
            async with self._http.stream(
                "POST", url, content=json_body(body), headers={**headers, **JSON_HEADERS}
            ) as response:
                if not response.is_success:
                    text = (await response.aread()).decode("utf-8", "replace")
                    raise self._status_error(response, text)
                translator = _Translator(self.id)
                frames = EventSource(response).aiter_sse()
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

    def _status_error(self, response: httpx.Response, body: str) -> ProviderError:
        """``error_for_status``, plus three Google habits: a bad key is a 400 ``API_KEY_INVALID``; a 429
        says when to retry in ``RetryInfo`` rather than in a header; and "Invalid or unsupported file
        uri: <url>" echoes the signed URL, whose query (the signature) must not reach logs."""
        error = error_for_status(
            self.id, response, _SIGNED_QUERY.sub(r"\1?…", body), could_not_fetch=could_not_fetch
        )
        details = _error_object(body)
        if error.kind == "bad_request" and "API_KEY_INVALID" in _reasons(details):
            return ProviderError("auth", error.message, provider=self.id, status=error.status)
        if error.kind == "rate_limit" and error.retry_after is None:
            error.retry_after = _retry_delay(details)
        return error

    def _base_url(self, model: ModelSpec) -> str:
        base = model.options.get("baseUrl") or self._environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
        return str(base).rstrip("/")

    @staticmethod
    def _max_tokens(model: ModelSpec, options: RequestOptions) -> int | None:
        if options.max_output_tokens is not None:
            return options.max_output_tokens
        configured = model.options.get("maxTokens")
        return configured if isinstance(configured, int) and configured > 0 else None

    def _extra(self, options: RequestOptions) -> Mapping[str, Any]:
        extra = options.extra.get(self.id)
        return extra if isinstance(extra, Mapping) else {}

    def _part(
        self,
        part: Part,
        model: ModelSpec,
        caps: Capabilities,
        sign_calls: bool,
        signatures: Mapping[str, str | None],
    ) -> dict[str, Any] | None:
        if isinstance(part, ReasoningPart):
            return None  # thought text is never sent back; signatures ride on their function calls
        if isinstance(part, TextPart):
            return {"text": part.text} if part.text else None
        if isinstance(part, ImagePart):
            return self._image(part, model, caps)
        if isinstance(part, ToolCallPart):
            call: dict[str, Any] = {
                "functionCall": {"name": part.name, "args": tool_arguments(part, self.id)}
            }
            signature = signatures.get(part.id)
            if signature:
                call["thoughtSignature"] = signature
            elif sign_calls:
                call["thoughtSignature"] = SKIP_SIGNATURE
            return call
        key = "error" if part.is_error else "output"
        return {"functionResponse": {"name": part.name, "response": {key: part.content}}}

    def _image(self, part: ImagePart, model: ModelSpec, caps: Capabilities) -> dict[str, Any]:
        check_image(part, caps, provider=self.id, model_id=model.model_id)
        if part.url is not None:
            return {"fileData": {"mimeType": part.mime_type, "fileUri": part.url}}
        assert part.data is not None  # an ImagePart holds exactly one of url and data
        if len(part.data) > caps.max_image_bytes:
            raise UnsupportedPartError(
                self.id, "image", part.mime_type, f"{len(part.data)} bytes > {caps.max_image_bytes}"
            )
        return {"inlineData": {"mimeType": part.mime_type, "data": b64(part)}}


@dataclass
class _Translator:
    """Chunks in, neutral events out; ``done`` after the chunk that carries ``finishReason``."""

    provider: str
    done: bool = False
    text_id: str | None = None
    texts: int = 0
    calls: int = 0
    thought_id: str | None = None
    thoughts: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    image_tokens: int | None = None

    def feed(self, data: str) -> list[ProviderEvent]:
        try:
            chunk = json.loads(data)
        except ValueError:
            raise ProviderError(
                "unavailable", "malformed JSON in the stream", provider=self.provider
            ) from None
        if not isinstance(chunk, dict):
            raise ProviderError("unavailable", "malformed chunk in the stream", provider=self.provider)
        if isinstance(chunk.get("error"), dict):
            error = chunk["error"]
            kind = _STATUS_KINDS.get(str(error.get("status")), "other")
            raise ProviderError(
                kind, f"{error.get('status', 'error')}: {error.get('message', '')}", provider=self.provider
            )
        try:
            return self._chunk(chunk)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProviderError("unavailable", "unexpected chunk shape", provider=self.provider) from exc

    def _chunk(self, chunk: dict[str, Any]) -> list[ProviderEvent]:
        self._usage(chunk.get("usageMetadata"))
        events: list[ProviderEvent] = []
        candidates = chunk.get("candidates") or []
        candidate = candidates[0] if candidates and isinstance(candidates[0], dict) else {}
        response_id = str(chunk.get("responseId") or "")
        for part in (candidate.get("content") or {}).get("parts") or []:
            events.extend(self._part(part, response_id))
        finish = candidate.get("finishReason")
        if finish is None and (chunk.get("promptFeedback") or {}).get("blockReason") and not candidates:
            finish = "PROMPT_BLOCKED"  # the prompt itself was refused: no candidate will ever come
        if finish is not None:
            events.extend(self._finish(str(finish)))
        return events

    def _part(self, part: Any, response_id: str) -> list[ProviderEvent]:
        if not isinstance(part, dict):
            return []
        if part.get("thought"):  # a thought summary: reasoning, never answer text
            return self._thought(part)
        events: list[ProviderEvent] = self._close_thought()
        if isinstance(part.get("text"), str) and part["text"]:
            if self.text_id is None:
                self.text_id = f"text-{self.texts}"
                self.texts += 1
                events.append(TextStart(id=self.text_id))
            events.append(TextDelta(id=self.text_id, delta=part["text"]))
        elif isinstance(part.get("functionCall"), dict):
            events.extend(self._close_text())
            call = part["functionCall"]
            call_id = call.get("id") or (
                f"{response_id}-call-{self.calls}" if response_id else f"call-{self.calls}"
            )
            self.calls += 1
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False, separators=(",", ":"))
            events += [
                ToolCallStart(id=call_id, name=call["name"]),
                ToolCallArgs(id=call_id, delta=arguments),
                ToolCallEnd(id=call_id),
            ]
            if isinstance(part.get("thoughtSignature"), str):
                events.append(
                    ReasoningOpaque(
                        id=call_id, kind="signature", value=part["thoughtSignature"], tool_call_id=call_id
                    )
                )
        return events

    def _thought(self, part: dict[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        if self.thought_id is None:
            events += self._close_text()
            self.thought_id = f"thought-{self.thoughts}"
            self.thoughts += 1
            events.append(ReasoningStart(id=self.thought_id))
        if isinstance(part.get("text"), str) and part["text"]:
            events.append(ReasoningDelta(id=self.thought_id, delta=part["text"]))
        return events

    def _close_thought(self) -> list[ProviderEvent]:
        if self.thought_id is None:
            return []
        thought_id, self.thought_id = self.thought_id, None
        return [ReasoningEnd(id=thought_id)]

    def _close_text(self) -> list[ProviderEvent]:
        if self.text_id is None:
            return []
        text_id, self.text_id = self.text_id, None
        return [TextEnd(id=text_id)]

    def _finish(self, reason: str) -> list[ProviderEvent]:
        self.done = True
        events = [*self._close_thought(), *self._close_text()]
        if self.input_tokens is not None or self.output_tokens is not None:
            events.append(
                Usage(
                    input_tokens=self.input_tokens,
                    output_tokens=self.output_tokens,
                    reasoning_tokens=self.reasoning_tokens,
                    cached_input_tokens=self.cached_tokens,
                    image_tokens=self.image_tokens,
                )
            )
        mapped: FinishReason
        if reason == "STOP" and self.calls:
            mapped = "tool_calls"
        elif reason == "PROMPT_BLOCKED":
            mapped = "content_filter"
        else:
            mapped = _FINISH_REASONS.get(reason, "other")
        events.append(Finish(reason=mapped))
        return events

    def _usage(self, usage: Any) -> None:
        """Counts are cumulative, the last chunk's win; thinking tokens are billed as output."""
        if not isinstance(usage, dict):
            return
        if isinstance(usage.get("promptTokenCount"), int):
            self.input_tokens = usage["promptTokenCount"]
        outputs = [usage.get(k) for k in ("candidatesTokenCount", "thoughtsTokenCount")]
        if any(isinstance(o, int) for o in outputs):
            self.output_tokens = sum(o for o in outputs if isinstance(o, int))
        if isinstance(usage.get("thoughtsTokenCount"), int):
            self.reasoning_tokens = usage["thoughtsTokenCount"]
        if isinstance(usage.get("cachedContentTokenCount"), int):
            self.cached_tokens = usage["cachedContentTokenCount"]
        images = [
            d.get("tokenCount")
            for d in usage.get("promptTokensDetails") or ()
            if isinstance(d, dict) and d.get("modality") == "IMAGE"
        ]
        if any(isinstance(i, int) for i in images):
            self.image_tokens = sum(i for i in images if isinstance(i, int))


def create(context: ProviderContext) -> GeminiProvider:
    return GeminiProvider(context)
