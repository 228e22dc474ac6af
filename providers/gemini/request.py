"""Neutral messages, tools and options as a ``GenerateContentRequest`` body (pure: same input, same dict)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from iris.providers.checks import (
    check_audio,
    check_document,
    check_image,
    check_tools,
    part_kind,
    tool_arguments,
)
from iris.providers.errors import UnsupportedPartError
from iris.providers.gemini.names import model_name, parse_version
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

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented stand-in for a ``thoughtSignature`` the history no longer has. Gemini 3 answers
400 to a replayed ``functionCall`` without one, and ``ToolCallPart`` cannot carry the real signature."""

EXTRA_GENERATION_CONFIG = ("topP", "topK", "stopSequences", "mediaResolution", "thinkingConfig")
EXTRA_TOP_LEVEL = ("safetySettings",)
"""``RequestOptions.extra["gemini"]`` keys copied as they are (into ``generationConfig`` or the body)."""

AUDIO_MIME_TYPES = {"audio/mpeg": "audio/mp3"}
"""Iris's MIME type → the name Gemini's audio guide lists, where they differ."""

_ALLOWED_PARTS: dict[str, tuple[type, ...]] = {
    "system": (TextPart,),
    "user": (TextPart, ImagePart, DocumentPart, AudioPart),
    "assistant": (ReasoningPart, TextPart, ToolCallPart),
    "tool": (ToolResultPart,),
}


def generate_content_request(
    messages: Sequence[Message],
    model: ModelSpec,
    options: RequestOptions,
    caps: Capabilities,
    *,
    provider: str,
) -> dict[str, Any]:
    """The ``GenerateContentRequest`` body. Pure: same input, same dict."""
    version = parse_version(model_name(model))
    sign_calls = version is not None and version >= (3, 0)
    system_texts = [options.system] if options.system else []
    contents: list[dict[str, Any]] = []
    last_kind = ""
    for message in messages:
        for part in message.parts:
            if not isinstance(part, _ALLOWED_PARTS[message.role]):
                raise UnsupportedPartError(
                    provider, part_kind(part), reason=f"not valid in a {message.role} message"
                )
        if message.role == "system":
            system_texts.extend(p.text for p in message.parts if isinstance(p, TextPart) and p.text)
            continue
        signatures = {
            part.tool_call_id: part.signature
            for part in message.parts
            if isinstance(part, ReasoningPart) and part.provider == provider and part.tool_call_id
        }
        parts = [
            p for part in message.parts if (p := _part(part, model, caps, provider, sign_calls, signatures))
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
        check_tools(options.tools, caps, provider=provider, model_id=model.model_id)
        body["tools"] = [
            {
                "functionDeclarations": [
                    {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
                    for t in options.tools
                ]
            }
        ]
        if (choice := options.tool_choice) is not None:
            calling: dict[str, Any] = {"mode": "ANY"}
            if choice.mode == "tool" and choice.name:
                calling["allowedFunctionNames"] = [choice.name]
            body["toolConfig"] = {"functionCallingConfig": calling}
    extra = _extra(options, provider)
    config: dict[str, Any] = {}
    max_tokens = _max_tokens(model, options)
    if max_tokens is not None:
        config["maxOutputTokens"] = max_tokens
    config.update(_sampling(options))
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


def _sampling(options: RequestOptions) -> dict[str, Any]:
    """The sampling and format knobs as ``generationConfig`` fields (only those set)."""
    out: dict[str, Any] = {}
    for name, key in (("temperature", "temperature"), ("top_p", "topP"), ("seed", "seed")):
        if (value := getattr(options, name)) is not None:
            out[key] = value
    if options.stop:
        out["stopSequences"] = list(options.stop)
    if (fmt := options.response_format) is not None:
        out["responseMimeType"] = "application/json"
        if fmt.type == "json_schema" and fmt.schema is not None:
            out["responseJsonSchema"] = fmt.schema
    return out


def ignored_extras(options: RequestOptions, provider: str) -> list[str]:
    """The ``extra[provider]`` keys the body leaves out (in neither ``EXTRA_`` tuple), sorted."""
    known = (*EXTRA_GENERATION_CONFIG, *EXTRA_TOP_LEVEL)
    return sorted(k for k in _extra(options, provider) if k not in known)


def _max_tokens(model: ModelSpec, options: RequestOptions) -> int | None:
    if options.max_output_tokens is not None:
        return options.max_output_tokens
    configured = model.options.get("maxTokens")
    return configured if isinstance(configured, int) and configured > 0 else None


def _extra(options: RequestOptions, provider: str) -> Mapping[str, Any]:
    extra = options.extra.get(provider)
    return extra if isinstance(extra, Mapping) else {}


def _part(
    part: Part,
    model: ModelSpec,
    caps: Capabilities,
    provider: str,
    sign_calls: bool,
    signatures: Mapping[str, str | None],
) -> dict[str, Any] | None:
    if isinstance(part, ReasoningPart):
        return None  # thought text is never sent back; signatures ride on their function calls
    if isinstance(part, TextPart):
        return {"text": part.text} if part.text else None
    if isinstance(part, ImagePart):
        return _image(part, model, caps, provider)
    if isinstance(part, DocumentPart):
        check_document(part, caps, provider=provider, model_id=model.model_id)
        return {"inlineData": {"mimeType": part.mime_type, "data": b64(part)}}
    if isinstance(part, AudioPart):
        check_audio(part, caps, provider=provider, model_id=model.model_id)
        return {
            "inlineData": {
                "mimeType": AUDIO_MIME_TYPES.get(part.mime_type, part.mime_type),
                "data": b64(part),
            }
        }
    if isinstance(part, ToolCallPart):
        call: dict[str, Any] = {"functionCall": {"name": part.name, "args": tool_arguments(part, provider)}}
        signature = signatures.get(part.id)
        if signature:
            call["thoughtSignature"] = signature
        elif sign_calls:
            call["thoughtSignature"] = SKIP_SIGNATURE
        return call
    key = "error" if part.is_error else "output"
    response: dict[str, Any] = {"name": part.name, "response": {key: part.content}}
    if part.images:  # Gemini 3: the images as the function response's own parts
        response["parts"] = [_response_part(image, model, caps, provider) for image in part.images]
    return {"functionResponse": response}


def _image(part: ImagePart, model: ModelSpec, caps: Capabilities, provider: str) -> dict[str, Any]:
    check_image(part, caps, provider=provider, model_id=model.model_id)
    if part.url is not None:
        return {"fileData": {"mimeType": part.mime_type, "fileUri": part.url}}
    assert part.data is not None  # an ImagePart holds exactly one of url and data
    if len(part.data) > caps.max_image_bytes:
        raise UnsupportedPartError(
            provider, "image", part.mime_type, f"{len(part.data)} bytes > {caps.max_image_bytes}"
        )
    return {"inlineData": {"mimeType": part.mime_type, "data": b64(part)}}


def _response_part(part: ImagePart, model: ModelSpec, caps: Capabilities, provider: str) -> dict[str, Any]:
    """A ``FunctionResponsePart``: inline bytes only (the Gemini API takes no file URIs there)."""
    if part.url is not None:
        raise UnsupportedPartError(
            provider, "image", part.mime_type, "function responses take inline images only"
        )
    return {"inlineData": _image(part, model, caps, provider)["inlineData"]}
