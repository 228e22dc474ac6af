"""Ollama's native chat API (``POST {host}/api/chat``), streamed as NDJSON: one JSON object per line.

The last object has ``"done": true`` with ``done_reason`` and the token counts. Images travel as raw
base64 strings in the message's ``images`` list (Ollama never fetches URLs). Tool calls arrive whole in
``message.tool_calls``; older servers give them no id, so ids are made up per response (``call_0``…).
No key is needed for a local server; ``apiKeyEnv`` names one for ollama.com or an authenticating proxy.

Thinking models (``options["reasoning"]: true`` on the row; Ollama's model list does not say) get
``think: true`` when asked to reason (``"low"``/``"medium"``/``"high"`` where ``options["thinkLevels"]``
says the model takes levels, as gpt-oss does), and ``message.thinking`` streams as reasoning. Ollama
keeps no signatures, so nothing goes back.

A message's ``content`` is one string: a user message's text parts (the user's words, a document's
text the core sends in its place) are joined as paragraphs, a blank line apart, where every other vendor
gets separate blocks; an assistant's text blocks are one answer and join as they streamed.

Ollama reads no PDFs (the core sends their text instead). Audio models (``options["audio"]: true`` on
a ``multimodal`` row; Ollama lists ``audio`` in ``/api/show`` capabilities) get WAV and MP3 bytes in the
same ``images`` list, where the server sniffs them (``RIFF…WAVE``, ``ID3`` or an MPEG frame).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx

from iris.providers.checks import check_audio, check_image, check_tools, media_type, part_kind, tool_arguments
from iris.providers.errors import ProviderError, UnsupportedPartError
from iris.providers.events import (
    Finish,
    FinishReason,
    ProviderEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from iris.providers.http import (
    JSON_HEADERS,
    b64,
    chunk_json,
    drain,
    error_for_status,
    json_body,
    require_key,
    transport_error,
)
from iris.providers.messages import (
    AudioPart,
    ImagePart,
    Message,
    ReasoningPart,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from iris.providers.openai import chat_tools, without_key
from iris.providers.options import API_KEY_ENV, BASE_URL, REASONING, OptionSpec
from iris.providers.spec import (
    SPEC_VERSION,
    AudioSupport,
    Capabilities,
    ModelSpec,
    ParameterSupport,
    ProviderContext,
    ReasoningSupport,
)

DEFAULT_HOST = "http://127.0.0.1:11434"
IMAGE_MIME_TYPES = ("image/png", "image/jpeg")
# Ollama publishes no request limit; a JSON body of base64 images is decoded whole by a local runner,
# so Iris keeps it to Gemini's 20 MB (the strictest inline figure a vendor documents).
MAX_REQUEST_BYTES = 20_000_000
PARAGRAPH = "\n\n"
"""Between a user message's text parts: the blocks other vendors get, in Ollama's one string."""


PARAMETERS = ParameterSupport(
    temperature=True,
    top_p=True,
    stop=True,
    seed=True,
    max_output_tokens=True,
    json_object=True,
    json_schema=True,
)
"""``options`` and ``format`` of ``/api/chat``; Ollama has no tool choice."""
AUDIO = AudioSupport(mime_types=("audio/wav", "audio/mpeg"))
"""What Ollama's server sniffs as audio in ``images`` (wav, mp3); it documents no duration limit."""


class OllamaProvider:
    """Ollama ``/api/chat`` over NDJSON; see the module docstring."""

    id = "ollama"
    spec_version = SPEC_VERSION
    model_options: Mapping[str, OptionSpec] = {
        "baseUrl": BASE_URL,
        "apiKeyEnv": API_KEY_ENV,
        "reasoning": REASONING,
        "thinkLevels": OptionSpec(type="boolean", description="think takes low/medium/high, not true"),
        "audio": OptionSpec(type="boolean", description="a multimodal model that hears audio (wav, mp3)"),
    }

    def __init__(self, context: ProviderContext) -> None:
        self._http = context.http
        self._environ = context.environ

    def key_env(self, model: ModelSpec) -> str | None:
        """Ollama needs no key, unless the model names one (a hosted or proxied Ollama) with ``apiKeyEnv``."""
        name = model.options.get("apiKeyEnv")
        return str(name) if name else None

    def capabilities(self, model: ModelSpec) -> Capabilities:
        """Ollama documents no image limits; these are conservative defaults the catalogue row may tighten."""
        vision = model.type != "text"
        return Capabilities(
            vision=vision,
            image_mime_types=IMAGE_MIME_TYPES if vision else (),
            max_images=8 if vision else 0,
            max_image_bytes=20_000_000 if vision else 0,
            image_bytes_measured_on="raw",
            max_image_edge_px=None,
            recommended_long_edge_px=None,
            url_fetch="none",
            tools=model.supports_tools,
            max_request_bytes=MAX_REQUEST_BYTES if vision else 0,
            parameters=PARAMETERS,
            reasoning=ReasoningSupport(
                supported=True, streamed=True, effort=model.options.get("thinkLevels") is True
            )
            if model.options.get("reasoning") is True
            else ReasoningSupport(),
            audio=AUDIO
            if model.type == "multimodal" and model.options.get("audio") is True
            else AudioSupport(),
        )

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        caps = self.capabilities(model)
        check_tools(options.tools, caps, provider=self.id, model_id=model.model_id)
        out: list[dict[str, Any]] = []
        if options.system:
            out.append({"role": "system", "content": options.system})
        for message in messages:
            if message.role == "tool":
                out.extend(self._tool_results(message, caps, model))
            else:
                out.append(self._message(message, caps, model))
        body: dict[str, Any] = {"model": model.model_id, "messages": out, "stream": True}
        if options.reasoning is not None and caps.reasoning.supported:
            body["think"] = options.reasoning.effort if caps.reasoning.effort else True
        if options.tools:
            body["tools"] = chat_tools(options.tools)
        if (fmt := options.response_format) is not None:
            body["format"] = fmt.schema if fmt.type == "json_schema" and fmt.schema is not None else "json"
        model_options: dict[str, Any] = {}
        if options.max_output_tokens is not None:
            model_options["num_predict"] = options.max_output_tokens
        for name in ("temperature", "top_p", "seed"):
            if (value := getattr(options, name)) is not None:
                model_options[name] = value
        if options.stop:
            model_options["stop"] = list(options.stop)
        extra = dict(options.extra.get(self.id) or {})
        for key, value in sorted(dict(extra.pop("options", None) or {}).items()):
            model_options.setdefault(key, value)  # Modelfile parameters (num_ctx, seed…)
        if model_options:
            body["options"] = model_options
        for key in sorted(extra):  # top-level knobs (keep_alive, think, format…) never override the mapping
            body.setdefault(key, extra[key])
        return body

    def _message(self, message: Message, caps: Capabilities, model: ModelSpec) -> dict[str, Any]:
        texts: list[str] = []
        images: list[str] = []
        calls: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, ReasoningPart) and message.role == "assistant":
                continue  # Ollama keeps no signatures: earlier thinking is not sent back
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, ImagePart) and message.role == "user":
                check_image(part, caps, provider=self.id, model_id=model.model_id)
                images.append(b64(part))
            elif isinstance(part, AudioPart) and message.role == "user":
                check_audio(part, caps, provider=self.id, model_id=model.model_id)
                images.append(b64(part))  # Ollama takes audio in the same list, sniffed by the server
            elif isinstance(part, ToolCallPart) and message.role == "assistant":
                if not caps.tools:
                    raise UnsupportedPartError(
                        self.id, "tool_call", None, f"{model.model_id} does not call tools"
                    )
                calls.append(
                    {
                        "id": part.id,
                        "function": {"name": part.name, "arguments": tool_arguments(part, self.id)},
                    }
                )
            else:
                raise UnsupportedPartError(
                    self.id, part_kind(part), media_type(part), f"not in a {message.role} message"
                )
        separator = PARAGRAPH if message.role == "user" else ""
        out: dict[str, Any] = {"role": message.role, "content": separator.join(texts)}
        if images:
            out["images"] = images
        if calls:
            out["tool_calls"] = calls
        return out

    def _tool_results(self, message: Message, caps: Capabilities, model: ModelSpec) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for part in message.parts:
            if not isinstance(part, ToolResultPart):
                raise UnsupportedPartError(self.id, part_kind(part), None, "not in a tool message")
            if not caps.tools:
                raise UnsupportedPartError(
                    self.id, "tool_result", None, f"{model.model_id} does not call tools"
                )
            if part.images:  # tool messages carry no images: the core sends them in a user message
                raise UnsupportedPartError(
                    self.id, "image", None, "not in a tool message (tool_result_images)"
                )
            content = f"Error: {part.content}" if part.is_error else part.content
            out.append(
                {
                    "role": "tool",
                    "content": content,
                    "tool_name": part.name,
                    "tool_call_id": part.tool_call_id,
                }
            )
        return out

    async def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        body = self.build_request(messages, model, options)
        headers = {"Accept": "application/x-ndjson"}
        key: str | None = None
        if key_env := self.key_env(model):
            key = require_key(self._environ, key_env, self.id)
            headers["Authorization"] = f"Bearer {key}"
        url = f"{self._host(model)}/api/chat"
        state = _StreamState()
        try:
            async with self._http.stream(
                "POST", url, content=json_body(body), headers={**headers, **JSON_HEADERS}
            ) as response:
                if not response.is_success:
                    text = (await response.aread()).decode("utf-8", "replace")
                    raise error_for_status(self.id, response, _error_text(text))
                lines = response.aiter_lines()
                async for line in lines:
                    if not line.strip():
                        continue
                    try:
                        events = state.feed(chunk_json(line), self.id)
                    except (ValueError, TypeError, AttributeError):  # not JSON, or not a chat object's shape
                        raise ProviderError(
                            "unavailable", "malformed line in the stream", provider=self.id
                        ) from None
                    if state.finished:
                        await drain(lines)  # the connection goes back to the pool
                    for event in events:
                        yield event
                    if state.finished:
                        return
        except httpx.HTTPError as exc:
            raise transport_error(self.id, exc) from exc
        except ProviderError as exc:
            raise without_key(exc, key) from None
        raise ProviderError("unavailable", 'the stream ended before "done": true', provider=self.id)

    def _host(self, model: ModelSpec) -> str:
        host = model.options.get("baseUrl") or self._environ.get("OLLAMA_HOST") or DEFAULT_HOST
        host = str(host).rstrip("/")
        # OLLAMA_HOST is often a bare "host:port" (that is how the server itself reads it).
        return host if "://" in host else f"http://{host}"


class _StreamState:
    """Per-response decoding state: the open text block and how many tool calls were seen."""

    def __init__(self) -> None:
        self.text_id: str | None = None
        self.text_blocks = 0
        self.thinking_id: str | None = None
        self.thinking_blocks = 0
        self.calls = 0
        self.finished = False

    def feed(self, obj: Any, provider: str) -> list[ProviderEvent]:
        """Events for one NDJSON object; ``TypeError`` if it is not an object at all."""
        if not isinstance(obj, dict):
            raise TypeError("not a JSON object")
        if "error" in obj:
            raise ProviderError("unavailable", f"error mid-stream: {obj['error']}"[:500], provider=provider)
        events: list[ProviderEvent] = []
        message = obj.get("message") or {}
        thinking = message.get("thinking")
        if isinstance(thinking, str) and thinking:
            if self.thinking_id is None:
                self.thinking_id = f"thinking-{self.thinking_blocks}"
                self.thinking_blocks += 1
                events.append(ReasoningStart(id=self.thinking_id))
            events.append(ReasoningDelta(id=self.thinking_id, delta=thinking))
        content = message.get("content")
        if isinstance(content, str) and content:
            events.extend(self._end_thinking())
            if self.text_id is None:
                self.text_id = f"text-{self.text_blocks}"
                self.text_blocks += 1
                events.append(TextStart(id=self.text_id))
            events.append(TextDelta(id=self.text_id, delta=content))
        for call in message.get("tool_calls") or ():
            events.extend(self._end_thinking())
            events.extend(self._end_text())
            function = call.get("function") or {}
            call_id = call.get("id") or f"call_{self.calls}"
            self.calls += 1
            arguments = function.get("arguments")
            text = (
                arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False)
            )
            events += [
                ToolCallStart(id=call_id, name=function.get("name") or ""),
                ToolCallArgs(id=call_id, delta=text),
                ToolCallEnd(id=call_id),
            ]
        if obj.get("done"):
            self.finished = True
            events.extend(self._end_thinking())
            events.extend(self._end_text())
            prompt, completion = obj.get("prompt_eval_count"), obj.get("eval_count")
            if prompt is not None or completion is not None:
                events.append(Usage(input_tokens=prompt, output_tokens=completion))
            events.append(Finish(reason=self._reason(obj.get("done_reason"))))
        return events

    def _end_thinking(self) -> list[ProviderEvent]:
        if self.thinking_id is None:
            return []
        thinking_id, self.thinking_id = self.thinking_id, None
        return [ReasoningEnd(id=thinking_id)]

    def _end_text(self) -> list[ProviderEvent]:
        if self.text_id is None:
            return []
        text_id, self.text_id = self.text_id, None
        return [TextEnd(id=text_id)]

    def _reason(self, done_reason: object) -> FinishReason:
        # Ollama says "stop" after tool calls too; older servers send no reason at all.
        if done_reason in ("stop", None, ""):
            return "tool_calls" if self.calls else "stop"
        if done_reason == "length":
            return "length"
        return "other"


def _error_text(body: str) -> str:
    """Ollama's ``{"error": "..."}`` body as its message (the JSON wrapper adds nothing)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
        return str(parsed["error"])
    return body


def create(context: ProviderContext) -> OllamaProvider:
    """Entry point (``iris.providers``)."""
    return OllamaProvider(context)
