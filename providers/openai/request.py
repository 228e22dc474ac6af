"""Neutral messages, tools and options as a Chat Completions body (pure; shared with LiteLLM)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from iris.providers.checks import (
    check_audio,
    check_document,
    check_image,
    check_tools,
    continued_turn,
    media_type,
    part_kind,
)
from iris.providers.errors import UnsupportedPartError
from iris.providers.http import b64, data_url
from iris.providers.messages import (
    AudioPart,
    DocumentPart,
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
from iris.providers.spec import Capabilities, ModelSpec


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

    Images become native ``image_url`` blocks (a data URL for inline bytes, the signed URL otherwise),
    PDFs ``file`` parts (``file_data`` as a data URL, and the ``filename``), audio ``input_audio``
    (``wav`` or ``mp3``); text-only user turns stay plain strings, which every compatible server
    understands.
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


AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}
"""Chat Completions' ``input_audio.format`` names: it takes these two only."""


def _unsupported(provider: str, part: Part, role: str) -> UnsupportedPartError:
    return UnsupportedPartError(provider, part_kind(part), media_type(part), f"not in a {role} message")


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
        elif isinstance(part, DocumentPart):
            check_document(part, caps, provider=provider, model_id=model_id)
            file = {"filename": part.name or "document.pdf", "file_data": data_url(part)}
            blocks.append({"type": "file", "file": file})
        elif isinstance(part, AudioPart):
            check_audio(part, caps, provider=provider, model_id=model_id)
            if part.mime_type not in AUDIO_FORMATS:
                raise UnsupportedPartError(provider, "audio", part.mime_type, "it takes wav and mp3 only")
            audio = {"data": b64(part), "format": AUDIO_FORMATS[part.mime_type]}
            blocks.append({"type": "input_audio", "input_audio": audio})
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
        if part.images:  # a tool message is text only: the core sends them in a user message instead
            raise UnsupportedPartError(provider, "image", None, "not in a tool message (tool_result_images)")
        # Chat Completions has no error flag on a tool message: say it in the content instead.
        content = f"Error: {part.content}" if part.is_error else part.content
        out.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": content})
    return out


def sampling(options: RequestOptions) -> dict[str, Any]:
    """The sampling and format knobs as Chat Completions fields (only those set)."""
    out: dict[str, Any] = {}
    for name in ("temperature", "top_p", "seed"):
        if (value := getattr(options, name)) is not None:
            out[name] = value
    if options.stop:
        out["stop"] = list(options.stop)
    if (fmt := options.response_format) is not None:
        out["response_format"] = (
            {"type": "json_object"}
            if fmt.type == "json_object"
            else {
                "type": "json_schema",
                "json_schema": {"name": fmt.name, "schema": fmt.schema or {}, "strict": fmt.strict},
            }
        )
    if (choice := options.tool_choice) is not None and options.tools:
        out["tool_choice"] = (
            "required"
            if choice.mode == "required"
            else {"type": "function", "function": {"name": choice.name}}
        )
    if options.parallel_tool_calls is not None and options.tools:
        out["parallel_tool_calls"] = options.parallel_tool_calls
    if options.end_user is not None:
        out["user"] = options.end_user
    return out


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
    body.update(sampling(options))
    if reasoning is not None:
        body["reasoning_effort"] = reasoning.effort
    for key in sorted(extra):  # vendor knobs (seed, reasoning_effort…) never override the mapping
        body.setdefault(key, extra[key])
    return body
