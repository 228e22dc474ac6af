"""Anthropic's Messages API: ``POST {base}/v1/messages`` with ``"stream": true``, answered as SSE.

Images go as Anthropic's own ``image`` blocks (base64 or ``url`` source), tools as ``tools`` with
``input_schema``, tool results as ``tool_result`` blocks in a user turn. Anthropic wants roles to
alternate, so consecutive turns that land on the same role are merged.

Extended thinking: asked to reason, the body carries ``thinking: {type: "enabled", budget_tokens}``
(``max_tokens`` grows to hold the budget; no temperature, which thinking refuses). ``thinking`` blocks
stream as reasoning (``thinking_delta``), their ``signature_delta`` as the opaque signature, and
``redacted_thinking`` as an opaque block with no text. Thinking blocks go back unchanged, signature
and all, in the assistant turn a tool-use continuation answers (the vendor requires it); earlier
turns' thinking is dropped, as the vendor allows.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import EventSource

from providers.checks import check_image, check_tools, continued_turn, part_kind, tool_arguments
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

DEFAULT_BASE_URL = "https://api.anthropic.com"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
KEY_ENV = "ANTHROPIC_API_KEY"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024

IMAGE_MIME_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
"""5 MB, checked by Anthropic on the base64 text ("image exceeds 5 MB maximum: … > 5242880 bytes")."""
MAX_REQUEST_BYTES = 32_000_000  # "32 MB" per request on the standard endpoints (docs: vision, limits)
MAX_IMAGES = 100  # 100 for 200k-context models (600 for others): the stricter figure
MAX_IMAGE_EDGE_PX = 8000
RECOMMENDED_LONG_EDGE_PX = 1568  # above this Anthropic downscales anyway, so sending more is waste

MODEL_OPTIONS: Mapping[str, OptionSpec] = {
    "reasoning": REASONING,
    "baseUrl": BASE_URL,
    "apiKeyEnv": API_KEY_ENV,
    "maxTokens": MAX_TOKENS,
    "urlFetch": OptionSpec(
        type="string",
        description='"none" sends images inline only (Claude behind gateways that take base64 only)',
        choices=("none", "public_https"),
    ),
}

EXTRA_OPTIONS = ("top_k", "top_p", "stop_sequences")
"""``RequestOptions.extra["anthropic"]`` keys copied into the body as they are; others are reported."""

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "other",
}
_ERROR_TYPES: dict[str, ProviderErrorKind] = {
    "authentication_error": "auth",
    "permission_error": "auth",
    "rate_limit_error": "rate_limit",
    "overloaded_error": "unavailable",
    "api_error": "unavailable",
    "timeout_error": "unavailable",
    "invalid_request_error": "bad_request",
    "not_found_error": "bad_request",
    "request_too_large": "bad_request",
}
MIN_THINKING_BUDGET = 1024
_THINKING_MODELS = re.compile(r"claude-(3-7-sonnet|(sonnet|opus|haiku)-[4-9])")
"""Claude models with extended thinking (3.7 Sonnet, and the 4.x families and later)."""
_FETCH_FAILED = re.compile(r"\b(unable|could not|couldn't|failed) to (download|fetch)\b", re.IGNORECASE)

_ALLOWED_PARTS: dict[str, tuple[type, ...]] = {
    "system": (TextPart,),
    "user": (TextPart, ImagePart),
    "assistant": (ReasoningPart, TextPart, ToolCallPart),
    "tool": (ToolResultPart,),
}


def could_not_fetch(status: int, body: str) -> bool:
    """Anthropic's answer when its servers cannot get an image URL: a 400 ``invalid_request_error``
    saying "Unable to download the file. Please verify the URL and try again."."""
    if status != 400:
        return False
    error = _error_object(body)
    return error.get("type") == "invalid_request_error" and bool(
        _FETCH_FAILED.search(str(error.get("message", "")))
    )


def _error_object(body: str) -> dict[str, Any]:
    """``{"type": "error", "error": {"type": …, "message": …}}`` → the inner object (or ``{}``)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) else {}


class AnthropicProvider:
    """Claude models over the Messages API, streamed."""

    id = "anthropic"
    spec_version = SPEC_VERSION
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
            return Capabilities(vision=False, tools=model.supports_tools, reasoning=reasoning)
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
        )

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        """The Messages API body. Pure: same input, same dict."""
        caps = self.capabilities(model)
        thinking = options.reasoning is not None and caps.reasoning.supported
        replay = continued_turn(messages) if thinking else None
        system_texts = [options.system] if options.system else []
        turns: list[dict[str, Any]] = []
        for position, message in enumerate(messages):
            for part in message.parts:
                if not isinstance(part, _ALLOWED_PARTS[message.role]):
                    raise UnsupportedPartError(
                        self.id, part_kind(part), reason=f"not valid in a {message.role} message"
                    )
            if message.role == "system":
                system_texts.extend(p.text for p in message.parts if isinstance(p, TextPart) and p.text)
                continue
            blocks = [
                block
                for part in message.parts
                if (block := self._block(part, model, caps, replay=position == replay))
            ]
            if not blocks:
                continue  # e.g. a turn of only empty text: Anthropic rejects empty content
            role = "assistant" if message.role == "assistant" else "user"
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)
            else:
                turns.append({"role": role, "content": blocks})

        body: dict[str, Any] = {
            "model": model.model_id,
            "max_tokens": self._max_tokens(model, options),
            "stream": True,
            "messages": turns,
        }
        if system_texts:
            body["system"] = "\n\n".join(system_texts)
        if thinking and options.reasoning is not None:
            budget = max(MIN_THINKING_BUDGET, options.reasoning.budget_tokens or MIN_THINKING_BUDGET)
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            body["max_tokens"] = max(body["max_tokens"], budget + DEFAULT_MAX_TOKENS)  # must exceed it
        elif options.temperature is not None:  # thinking takes no temperature
            body["temperature"] = options.temperature
        if options.tools:
            check_tools(options.tools, caps, provider=self.id, model_id=model.model_id)
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in options.tools
            ]
        extra = self._extra(options)
        body.update((k, v) for k, v in extra.items() if k in EXTRA_OPTIONS)
        return body

    async def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        """POST the request and translate Anthropic's SSE events into neutral events."""
        key = require_key(self._environ, self.key_env(model), self.id)
        body = self.build_request(messages, model, options)
        ignored = sorted(k for k in self._extra(options) if k not in EXTRA_OPTIONS)
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
                translator = _Translator(self.id)
                frames = EventSource(response).aiter_sse()
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

    @staticmethod
    def _max_tokens(model: ModelSpec, options: RequestOptions) -> int:
        """Anthropic requires ``max_tokens``: the request's, else the catalogue row's, else 1024."""
        if options.max_output_tokens is not None:
            return options.max_output_tokens
        configured = model.options.get("maxTokens")
        return configured if isinstance(configured, int) and configured > 0 else DEFAULT_MAX_TOKENS

    def _extra(self, options: RequestOptions) -> Mapping[str, Any]:
        extra = options.extra.get(self.id)
        return extra if isinstance(extra, Mapping) else {}

    def _block(
        self, part: Part, model: ModelSpec, caps: Capabilities, *, replay: bool
    ) -> dict[str, Any] | None:
        if isinstance(part, ReasoningPart):
            return _thinking_block(part, self.id) if replay else None
        if isinstance(part, TextPart):
            return {"type": "text", "text": part.text} if part.text else None
        if isinstance(part, ImagePart):
            return self._image(part, model, caps)
        if isinstance(part, ToolCallPart):
            return {
                "type": "tool_use",
                "id": part.id,
                "name": part.name,
                "input": tool_arguments(part, self.id),
            }
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": part.tool_call_id,
            "content": part.content,
        }
        if part.is_error:
            block["is_error"] = True
        return block

    def _image(self, part: ImagePart, model: ModelSpec, caps: Capabilities) -> dict[str, Any]:
        check_image(part, caps, provider=self.id, model_id=model.model_id)
        if part.url is not None:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        data = b64(part)
        if len(data) > caps.max_image_bytes:
            raise UnsupportedPartError(
                self.id, "image", part.mime_type, f"base64 is {len(data)} bytes > {caps.max_image_bytes}"
            )
        return {"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": data}}


def _thinking_block(part: ReasoningPart, provider: str) -> dict[str, Any] | None:
    """A thinking block exactly as the vendor sent it (its own only; unsigned text is not replayable)."""
    if part.provider != provider:
        return None
    if part.redacted is not None:
        return {"type": "redacted_thinking", "data": part.redacted}
    if part.signature is None:
        return None
    return {"type": "thinking", "thinking": part.text, "signature": part.signature}


@dataclass
class _Block:
    kind: str  # "text", "tool", "thinking" or "other" (server tools: nothing neutral to say)
    id: str = ""
    has_args: bool = False
    signature: str = ""


@dataclass
class _Translator:
    """Anthropic SSE events in, neutral events out; ``done`` once ``message_stop`` was seen."""

    provider: str
    done: bool = False
    blocks: dict[int, _Block] = field(default_factory=dict)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    stop_reason: str | None = None

    def feed(self, name: str, data: str) -> list[ProviderEvent]:
        try:
            payload = json.loads(data)
        except ValueError:
            raise ProviderError(
                "unavailable", f"malformed JSON in a {name!r} event", provider=self.provider
            ) from None
        if not isinstance(payload, dict):
            raise ProviderError("unavailable", f"malformed {name!r} event", provider=self.provider)
        kind = payload.get("type", name)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            return []  # ping, and event types newer than this code
        try:
            events: list[ProviderEvent] = handler(payload)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProviderError("unavailable", f"unexpected {kind!r} event", provider=self.provider) from exc
        return events

    def _on_message_start(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        self._usage(payload.get("message", {}).get("usage"))
        return []

    def _on_content_block_start(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        index, block = payload.get("index", 0), payload.get("content_block", {})
        if block.get("type") == "text":
            self.blocks[index] = _Block("text", f"text-{index}")
            events: list[ProviderEvent] = [TextStart(id=f"text-{index}")]
            if block.get("text"):
                events.append(TextDelta(id=f"text-{index}", delta=block["text"]))
            return events
        if block.get("type") == "tool_use":
            self.blocks[index] = _Block("tool", block["id"])
            return [ToolCallStart(id=block["id"], name=block["name"])]
        if block.get("type") == "thinking":
            self.blocks[index] = _Block(
                "thinking", f"thinking-{index}", signature=block.get("signature") or ""
            )
            started: list[ProviderEvent] = [ReasoningStart(id=f"thinking-{index}")]
            if block.get("thinking"):
                started.append(ReasoningDelta(id=f"thinking-{index}", delta=block["thinking"]))
            return started
        self.blocks[index] = _Block("other")
        if block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
            return [ReasoningOpaque(id=f"redacted-{index}", kind="redacted", value=block["data"])]
        return []

    def _on_content_block_delta(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        block, delta = self.blocks.get(payload.get("index", 0)), payload.get("delta", {})
        if block is None:
            return []
        if block.kind == "text" and delta.get("type") == "text_delta" and delta.get("text"):
            return [TextDelta(id=block.id, delta=delta["text"])]
        if block.kind == "tool" and delta.get("type") == "input_json_delta" and delta.get("partial_json"):
            block.has_args = True
            return [ToolCallArgs(id=block.id, delta=delta["partial_json"])]
        if block.kind == "thinking" and delta.get("type") == "thinking_delta" and delta.get("thinking"):
            return [ReasoningDelta(id=block.id, delta=delta["thinking"])]
        if block.kind == "thinking" and delta.get("type") == "signature_delta":
            block.signature += str(delta.get("signature", ""))
        return []

    def _on_content_block_stop(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        block = self.blocks.pop(payload.get("index", 0), None)
        if block is None or block.kind == "other":
            return []
        if block.kind == "text":
            return [TextEnd(id=block.id)]
        if block.kind == "thinking":
            signed: list[ProviderEvent] = (
                [ReasoningOpaque(id=block.id, kind="signature", value=block.signature)]
                if block.signature
                else []
            )
            return [*signed, ReasoningEnd(id=block.id)]
        # A tool without arguments streams no JSON at all; say "{}" so the arguments always parse.
        opened: list[ProviderEvent] = [] if block.has_args else [ToolCallArgs(id=block.id, delta="{}")]
        return [*opened, ToolCallEnd(id=block.id)]

    def _on_message_delta(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        self.stop_reason = payload.get("delta", {}).get("stop_reason") or self.stop_reason
        self._usage(payload.get("usage"))
        return []

    def _on_message_stop(self, _payload: dict[str, Any]) -> list[ProviderEvent]:
        self.done = True
        events: list[ProviderEvent] = []
        if self.input_tokens is not None or self.output_tokens is not None:
            events.append(
                Usage(
                    input_tokens=self.input_tokens,
                    output_tokens=self.output_tokens,
                    cached_input_tokens=self.cached_tokens,
                )
            )
        events.append(Finish(reason=_STOP_REASONS.get(self.stop_reason or "", "other")))
        return events

    def _on_error(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        error = payload.get("error") or {}
        kind = _ERROR_TYPES.get(str(error.get("type")), "other")
        message = f"{error.get('type', 'error')}: {error.get('message', '')}"
        raise ProviderError(kind, message, provider=self.provider)

    def _usage(self, usage: Any) -> None:
        """Input counts every prompt token (cached ones too); output is cumulative, the last one wins."""
        if not isinstance(usage, dict):
            return
        parts = [
            usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        if any(isinstance(p, int) for p in parts):
            self.input_tokens = sum(p for p in parts if isinstance(p, int))
        if isinstance(usage.get("cache_read_input_tokens"), int):
            self.cached_tokens = usage["cache_read_input_tokens"]
        if isinstance(usage.get("output_tokens"), int):
            self.output_tokens = usage["output_tokens"]


def create(context: ProviderContext) -> AnthropicProvider:
    return AnthropicProvider(context)
