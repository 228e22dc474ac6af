"""OpenAI Chat Completions (``POST {base}/chat/completions``) streamed as SSE ``chat.completion.chunk``s.

Also speaks to OpenAI-compatible servers (OpenRouter, vLLM, LM Studio…): point ``baseUrl`` at them,
name their key variable with ``apiKeyEnv`` or set ``noKey``. The message mapping (:func:`chat_messages`)
and the chunk decoder (:class:`ChunkDecoder`) are pure and shared with the LiteLLM provider, which takes
the same OpenAI shapes.

Reasoning: asked to reason, a model that can (o-series and GPT-5 by name, or ``options["reasoning"]``
on a compatible server) gets ``reasoning_effort``. OpenAI itself streams no reasoning text in Chat
Completions, but reports ``completion_tokens_details.reasoning_tokens``; compatible servers stream it
as ``reasoning_content`` (DeepSeek, vLLM) or ``reasoning`` (OpenRouter, Ollama) deltas, and LiteLLM
adds Anthropic's signed ``thinking_blocks``, which go back unchanged on the assistant turn a tool-use
continuation answers (only there: DeepSeek refuses ``reasoning_content`` sent back).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
from httpx_sse import EventSource

from providers.checks import check_image, check_tools, continued_turn, part_kind
from providers.errors import ProviderError, UnsupportedPartError
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
)
from providers.http import (
    JSON_HEADERS,
    data_url,
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
    ToolSpec,
)
from providers.options import API_KEY_ENV, BASE_URL, REASONING, OptionSpec
from providers.spec import SPEC_VERSION, Capabilities, ModelSpec, ProviderContext, ReasoningSupport

DEFAULT_BASE_URL = "https://api.openai.com/v1"
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
# "50 MB of image bytes per request" (the older Images and Vision guide; the current one is quoted at
# 512 MB): the stricter figure, applied to the whole body.
MAX_REQUEST_BYTES = 50_000_000
FINISH_REASONS: Mapping[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",  # the pre-tools name some compatible servers still send
    "content_filter": "content_filter",
}
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
}
_DOWNLOAD_FAILURES = ("Timeout while downloading", "Error while downloading")
_REASONING_MODELS = re.compile(r"^(o\d|gpt-5)")
"""OpenAI's reasoning models: the o-series and GPT-5."""
_REASONING_KEYS = ("reasoning_content", "reasoning")


def reasoning_support(model: ModelSpec, *, streamed: bool) -> ReasoningSupport:
    """Reasoning by model name, unless ``options["reasoning"]`` says otherwise."""
    thinks = model.options.get("reasoning", bool(_REASONING_MODELS.match(model.model_id)))
    if thinks is not True:
        return ReasoningSupport()
    return ReasoningSupport(supported=True, streamed=streamed, effort=True)


def chat_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """ToolSpecs as Chat Completions ``function`` tools."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def chat_messages(
    messages: Sequence[Message],
    *,
    system: str | None,
    caps: Capabilities,
    provider: str,
    model_id: str,
    detail: str = "auto",
    replay_thinking: bool = False,
) -> list[dict[str, Any]]:
    """Neutral messages as Chat Completions ``messages`` (pure; raises for any part it cannot map).

    Images become native ``image_url`` blocks (a data URL for inline bytes, the signed URL otherwise);
    text-only user turns stay plain strings, which every compatible server understands.
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    continued = continued_turn(messages) if replay_thinking else None
    for position, message in enumerate(messages):
        if message.role == "system":
            out.append({"role": "system", "content": _only_text(message, provider)})
        elif message.role == "user":
            out.append({"role": "user", "content": _user_content(message, caps, provider, model_id, detail)})
        elif message.role == "assistant":
            out.append(_assistant(message, caps, provider, model_id, replay=position == continued))
        else:
            out.extend(_tool_results(message, caps, provider, model_id))
    return out


def _unsupported(provider: str, part: Part, role: str) -> UnsupportedPartError:
    media_type = part.mime_type if isinstance(part, ImagePart) else None
    return UnsupportedPartError(provider, part_kind(part), media_type, f"not in a {role} message")


def _only_text(message: Message, provider: str) -> str:
    for part in message.parts:
        if not isinstance(part, TextPart):
            raise _unsupported(provider, part, message.role)
    return message.text


def _user_content(
    message: Message, caps: Capabilities, provider: str, model_id: str, detail: str
) -> str | list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            check_image(part, caps, provider=provider, model_id=model_id)
            url = part.url if part.url is not None else data_url(part)
            blocks.append({"type": "image_url", "image_url": {"url": url, "detail": detail}})
        else:
            raise _unsupported(provider, part, "user")
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        return str(blocks[0]["text"])
    return blocks


def _thinking_block(part: ReasoningPart) -> dict[str, Any] | None:
    if part.redacted is not None:
        return {"type": "redacted_thinking", "data": part.redacted}
    if part.signature is None:
        return None
    return {"type": "thinking", "thinking": part.text, "signature": part.signature}


def _assistant(
    message: Message, caps: Capabilities, provider: str, model_id: str, *, replay: bool
) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    thinking: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            block = _thinking_block(part) if replay and part.provider == provider else None
            if block is not None:
                thinking.append(block)
        elif isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ToolCallPart):
            if not caps.tools:
                raise UnsupportedPartError(provider, "tool_call", None, f"{model_id} does not call tools")
            calls.append(
                {
                    "id": part.id,
                    "type": "function",
                    "function": {"name": part.name, "arguments": part.arguments},
                }
            )
        else:
            raise _unsupported(provider, part, "assistant")
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    if thinking:
        out["thinking_blocks"] = thinking
    return out


def _tool_results(message: Message, caps: Capabilities, provider: str, model_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in message.parts:
        if not isinstance(part, ToolResultPart):
            raise _unsupported(provider, part, "tool")
        if not caps.tools:
            raise UnsupportedPartError(provider, "tool_result", None, f"{model_id} does not call tools")
        # Chat Completions has no error flag on a tool message: say it in the content instead.
        content = f"Error: {part.content}" if part.is_error else part.content
        out.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": content})
    return out


class ChunkDecoder:
    """Turns ``chat.completion.chunk`` dicts into neutral events (pure state machine, no I/O).

    Text and tool-call blocks are opened on their first delta; tool calls are keyed by ``index`` (the id
    and name come on the first delta) and all stay open until the choice finishes. ``Usage`` and
    ``Finish`` come from :meth:`finish`, once the stream's terminal marker arrived.
    """

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.response_id = ""
        self.reason: FinishReason | None = None
        self._text_id: str | None = None
        self._text_blocks = 0
        self._reasoning_id: str | None = None
        self._reasoning_blocks = 0
        self._calls: dict[int, str] = {}
        self._ended: set[int] = set()
        self._usage: Usage | None = None

    def feed(self, chunk: Mapping[str, Any]) -> list[ProviderEvent]:
        """Events for one chunk; raises ``ProviderError`` for an error object sent mid-stream."""
        error = chunk.get("error")
        if error:
            message = error.get("message", "") if isinstance(error, dict) else str(error)
            raise ProviderError("unavailable", f"error mid-stream: {message}"[:500], provider=self.provider)
        if not self.response_id and isinstance(chunk.get("id"), str):
            self.response_id = chunk["id"]
        events: list[ProviderEvent] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue  # only one choice is ever requested
            events.extend(self._delta(choice.get("delta") or {}))
            reason = choice.get("finish_reason")
            if reason:
                self.reason = FINISH_REASONS.get(reason, "other")
                events.extend(self._close_all())
        usage = chunk.get("usage")
        if isinstance(usage, dict):  # the last report wins (some servers send running totals on every chunk)
            self._usage = _usage(usage)
        return events

    def finish(self) -> list[ProviderEvent]:
        """Once the stream's terminal marker arrived: open blocks end, then usage and ``Finish``."""
        usage = [self._usage] if self._usage is not None else []
        return [*self._close_all(), *usage, Finish(reason=self.reason or "other")]

    def _delta(self, delta: Mapping[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = self._reasoning(delta)
        for key in ("content", "refusal"):  # a refusal is the model's answer too: show it, never drop it
            text = delta.get(key)
            if isinstance(text, str) and text:
                events.extend(self._end_reasoning())
                if self._text_id is None:
                    base = self.response_id or "text"
                    self._text_id = base if self._text_blocks == 0 else f"{base}-{self._text_blocks}"
                    self._text_blocks += 1
                    events.append(TextStart(id=self._text_id))
                events.append(TextDelta(id=self._text_id, delta=text))
        for position, call in enumerate(delta.get("tool_calls") or ()):
            index = call.get("index", position)
            function = call.get("function") or {}
            if index not in self._calls and index not in self._ended:
                events.extend(self._end_reasoning())
                events.extend(self._end_text())
                call_id = call.get("id") or f"call_{index}"
                self._calls[index] = call_id
                events.append(ToolCallStart(id=call_id, name=function.get("name") or ""))
            arguments = function.get("arguments")
            if index in self._calls and isinstance(arguments, str) and arguments:
                events.append(ToolCallArgs(id=self._calls[index], delta=arguments))
        return events

    def _reasoning(self, delta: Mapping[str, Any]) -> list[ProviderEvent]:
        """Reasoning text (``reasoning_content`` or ``reasoning``) and LiteLLM's ``thinking_blocks``."""
        events: list[ProviderEvent] = []
        text = next((delta[k] for k in _REASONING_KEYS if isinstance(delta.get(k), str) and delta[k]), None)
        blocks = [b for b in delta.get("thinking_blocks") or () if isinstance(b, Mapping)]
        if text is None and not blocks:
            return events
        if self._reasoning_id is None:
            self._reasoning_id = f"reasoning-{self._reasoning_blocks}"
            self._reasoning_blocks += 1
            events.append(ReasoningStart(id=self._reasoning_id))
        if text is not None:
            events.append(ReasoningDelta(id=self._reasoning_id, delta=text))
        for block in blocks:
            if block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
                events.append(ReasoningOpaque(id=self._reasoning_id, kind="redacted", value=block["data"]))
            elif isinstance(block.get("signature"), str) and block["signature"]:
                events.append(
                    ReasoningOpaque(id=self._reasoning_id, kind="signature", value=block["signature"])
                )
        return events

    def _end_reasoning(self) -> list[ProviderEvent]:
        if self._reasoning_id is None:
            return []
        reasoning_id, self._reasoning_id = self._reasoning_id, None
        return [ReasoningEnd(id=reasoning_id)]

    def _end_text(self) -> list[ProviderEvent]:
        if self._text_id is None:
            return []
        text_id, self._text_id = self._text_id, None
        return [TextEnd(id=text_id)]

    def _close_all(self) -> list[ProviderEvent]:
        events = [*self._end_reasoning(), *self._end_text()]
        for index in sorted(self._calls):
            events.append(ToolCallEnd(id=self._calls[index]))
            self._ended.add(index)
        self._calls.clear()
        return events


def _usage(usage: Mapping[str, Any]) -> Usage:
    """Chat Completions counts; the reasoning and cached details where the server reports them."""
    completion = usage.get("completion_tokens_details")
    prompt = usage.get("prompt_tokens_details")
    return Usage(
        input_tokens=usage.get("prompt_tokens"),
        output_tokens=usage.get("completion_tokens"),
        reasoning_tokens=completion.get("reasoning_tokens") if isinstance(completion, Mapping) else None,
        cached_input_tokens=prompt.get("cached_tokens") if isinstance(prompt, Mapping) else None,
    )


def could_not_fetch(status: int, body: str) -> bool:
    """OpenAI's "I could not download your image URL" 400 (a retry with inline bytes usually works)."""
    if status != 400:
        return False
    try:
        error = json.loads(body).get("error") or {}
    except (ValueError, AttributeError):
        return any(marker in body for marker in _DOWNLOAD_FAILURES)
    message = str(error.get("message") or "")
    return error.get("code") == "invalid_image_url" or any(m in message for m in _DOWNLOAD_FAILURES)


def without_key(error: ProviderError, key: str | None) -> ProviderError:
    """The same error with ``key`` blanked out of its message, in case a server echoed it back."""
    if not key or key not in error.message:
        return error
    return ProviderError(
        error.kind,
        error.message.replace(key, "***"),
        provider=error.provider,
        status=error.status,
        retry_after=error.retry_after,
    )


def chat_request(
    messages: Sequence[Message],
    model: ModelSpec,
    options: RequestOptions,
    caps: Capabilities,
    *,
    provider: str,
    max_tokens_field: str,
) -> dict[str, Any]:
    """A streaming Chat Completions body; shared with LiteLLM, which takes the same shape."""
    extra = dict(options.extra.get(provider) or {})
    detail = str(extra.pop("detail", None) or model.options.get("detail") or "auto")
    check_tools(options.tools, caps, provider=provider, model_id=model.model_id)
    reasoning = options.reasoning if caps.reasoning.supported else None
    body: dict[str, Any] = {
        "model": model.model_id,
        "messages": chat_messages(
            messages,
            system=options.system,
            caps=caps,
            provider=provider,
            model_id=model.model_id,
            detail=detail,
            replay_thinking=reasoning is not None,
        ),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if options.tools:
        body["tools"] = chat_tools(options.tools)
    if options.max_output_tokens is not None:
        body[max_tokens_field] = options.max_output_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if reasoning is not None:
        body["reasoning_effort"] = reasoning.effort
    for key in sorted(extra):  # vendor knobs (seed, reasoning_effort…) never override the mapping
        body.setdefault(key, extra[key])
    return body


class OpenAIProvider:
    """Chat Completions over SSE; see the module docstring."""

    id = "openai"
    spec_version = SPEC_VERSION
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
        """From OpenAI's (older, stricter) vision guide: 20 MB per image, 500 images, fitted to 2048 px."""
        vision = model.type != "text"
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
                frames = EventSource(response).aiter_sse()
                async for sse in frames:
                    if sse.data == "[DONE]":
                        await drain(frames)  # the connection goes back to the pool
                        for event in decoder.finish():
                            yield event
                        return
                    if not sse.data:
                        continue
                    try:
                        events = decoder.feed(json.loads(sse.data))
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
