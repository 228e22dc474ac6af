"""Neutral messages, tools and options as a Messages API body (pure: same input, same dict)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from iris.providers.checks import (
    check_audio,
    check_document,
    check_image,
    check_tools,
    continued_turn,
    part_kind,
    tool_arguments,
)
from iris.providers.errors import UnsupportedPartError
from iris.providers.http import b64
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
)
from iris.providers.spec import Capabilities, ModelSpec

DEFAULT_MAX_TOKENS = 1024

EXTRA_OPTIONS = ("top_k", "top_p", "stop_sequences", "cache_control")
"""``RequestOptions.extra["anthropic"]`` keys copied into the body as they are; others are reported.
``cache_control`` is the request's automatic prompt caching (the prefix up to its last block)."""

MIN_THINKING_BUDGET = 1024

_ALLOWED_PARTS: dict[str, tuple[type, ...]] = {
    "system": (TextPart,),
    "user": (TextPart, ImagePart, DocumentPart, AudioPart),
    "assistant": (ReasoningPart, TextPart, ToolCallPart),
    "tool": (ToolResultPart,),
}


def messages_request(
    messages: Sequence[Message],
    model: ModelSpec,
    options: RequestOptions,
    caps: Capabilities,
    *,
    provider: str,
) -> dict[str, Any]:
    """The Messages API body. Pure: same input, same dict."""
    thinking = options.reasoning is not None and caps.reasoning.supported
    replay = continued_turn(messages) if thinking else None
    system_texts = [options.system] if options.system else []
    turns: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        for part in message.parts:
            if not isinstance(part, _ALLOWED_PARTS[message.role]):
                raise UnsupportedPartError(
                    provider, part_kind(part), reason=f"not valid in a {message.role} message"
                )
        if message.role == "system":
            system_texts.extend(p.text for p in message.parts if isinstance(p, TextPart) and p.text)
            continue
        blocks = [
            block
            for part in message.parts
            if (block := _block(part, model, caps, provider, replay=position == replay))
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
        "max_tokens": _max_tokens(model, options),
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
    if options.top_p is not None:
        body["top_p"] = options.top_p
    if options.stop:
        body["stop_sequences"] = list(options.stop)
    if (fmt := options.response_format) is not None and fmt.type == "json_schema":
        body["output_config"] = {"format": {"type": "json_schema", "schema": fmt.schema or {}}}
    if options.end_user is not None:
        body["metadata"] = {"user_id": options.end_user}
    if options.tools:
        check_tools(options.tools, caps, provider=provider, model_id=model.model_id)
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in options.tools
        ]
        if (choice := _tool_choice(options)) is not None:
            body["tool_choice"] = choice
    extra = _extra(options, provider)
    body.update((k, v) for k, v in extra.items() if k in EXTRA_OPTIONS)
    return body


def _tool_choice(options: RequestOptions) -> dict[str, Any] | None:
    """``tool_choice``: ``any`` (required), one ``tool``, or ``auto``; each can forbid parallel calls."""
    choice = options.tool_choice
    if choice is None and options.parallel_tool_calls is not False:
        return None
    out: dict[str, Any] = (
        {"type": "auto"}
        if choice is None
        else {"type": "any"}
        if choice.mode == "required"
        else {"type": "tool", "name": choice.name}
    )
    if options.parallel_tool_calls is False:
        out["disable_parallel_tool_use"] = True
    return out


def ignored_extras(options: RequestOptions, provider: str) -> list[str]:
    """The ``extra[provider]`` keys the body leaves out (not in :data:`EXTRA_OPTIONS`), sorted."""
    return sorted(k for k in _extra(options, provider) if k not in EXTRA_OPTIONS)


def _max_tokens(model: ModelSpec, options: RequestOptions) -> int:
    """Anthropic requires ``max_tokens``: the request's, else the catalogue row's, else 1024."""
    if options.max_output_tokens is not None:
        return options.max_output_tokens
    configured = model.options.get("maxTokens")
    return configured if isinstance(configured, int) and configured > 0 else DEFAULT_MAX_TOKENS


def _extra(options: RequestOptions, provider: str) -> Mapping[str, Any]:
    extra = options.extra.get(provider)
    return extra if isinstance(extra, Mapping) else {}


def _block(
    part: Part, model: ModelSpec, caps: Capabilities, provider: str, *, replay: bool
) -> dict[str, Any] | None:
    if isinstance(part, ReasoningPart):
        return _thinking_block(part, provider) if replay else None
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ImagePart):
        return _image(part, model, caps, provider)
    if isinstance(part, DocumentPart):
        check_document(part, caps, provider=provider, model_id=model.model_id)
        source = {"type": "base64", "media_type": part.mime_type, "data": b64(part)}
        return {"type": "document", "source": source, **({"title": part.name} if part.name else {})}
    if isinstance(part, AudioPart):  # Claude hears no audio: caps declare none, so this refuses it
        check_audio(part, caps, provider=provider, model_id=model.model_id)
        raise UnsupportedPartError(provider, "audio", part.mime_type, "the Messages API has no audio block")
    if isinstance(part, ToolCallPart):
        return {
            "type": "tool_use",
            "id": part.id,
            "name": part.name,
            "input": tool_arguments(part, provider),
        }
    content: str | list[dict[str, Any]] = part.content
    if part.images:  # native: image blocks beside the text, inside the tool_result
        content = [
            *([{"type": "text", "text": part.content}] if part.content else []),
            *(_image(image, model, caps, provider) for image in part.images),
        ]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": content}
    if part.is_error:
        block["is_error"] = True
    return block


def _image(part: ImagePart, model: ModelSpec, caps: Capabilities, provider: str) -> dict[str, Any]:
    check_image(part, caps, provider=provider, model_id=model.model_id)
    if part.url is not None:
        return {"type": "image", "source": {"type": "url", "url": part.url}}
    data = b64(part)
    if len(data) > caps.max_image_bytes:
        raise UnsupportedPartError(
            provider, "image", part.mime_type, f"base64 is {len(data)} bytes > {caps.max_image_bytes}"
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
