"""An OpenAI request → the unsaved history, tools and knobs of a stateless run.

User images are a ``data:`` URL (sniffed and bounded like an upload, never stored) or one of our signed
URLs (the attachment URL policy: the caller's own upload); any other URL is refused. PDFs (``file``
parts with ``file_data``) and audio (``input_audio``) are inline only, checked like uploads and never
stored; a ``file_id`` (OpenAI's Files API) is refused. Assistant tool
calls and ``tool`` answers become the rows a stored thread would hold, so the model sees the same
history either way. Roles ``system`` and ``developer`` are the system prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from iris.app.agui.input import InboundAttachment
from iris.app.api.openai.wire import (
    ChatCompletionRequest,
    FileContent,
    ImageContent,
    InputAudioContent,
    JsonObjectFormatIn,
    JsonSchemaFormatIn,
    NamedToolChoice,
    OpenAIAssistantMessage,
    OpenAIToolMessage,
    OpenAIUserMessage,
    TextContent,
    TextOnly,
    UserPart,
)
from iris.app.errors import Unprocessable
from iris.app.media.base64_data import decode_base64
from iris.app.media.inline_request import (
    decode_data_url,
    inspect_inline,
    inspect_inline_audio,
    inspect_inline_pdf,
)
from iris.app.media.uploads import clean_filename
from iris.app.persistence.models import Message
from iris.app.persistence.repositories import UploadRepository
from iris.app.runs import PartLimits, canonical_user_parts, thread_of
from iris.app.security.auth import Principal
from iris.app.security.url_policy import UrlPolicy
from iris.app.settings import Settings
from iris.providers import RequestOptions, ResponseFormat, ToolChoice, ToolSpec

_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


@dataclass(frozen=True, slots=True)
class GatewayInput:
    """What :func:`iris.app.runs.stateless.chat.stateless_run` takes, read from one OpenAI request."""

    history: list[Message]
    tools: tuple[ToolSpec, ...]
    request: RequestOptions
    reasoning: Mapping[str, Any] | None


def request_options(body: ChatCompletionRequest) -> RequestOptions:
    """The sampling and format knobs (checked against the model by the core)."""
    fmt = body.response_format
    response_format = None
    if isinstance(fmt, JsonObjectFormatIn):
        response_format = ResponseFormat(type="json_object")
    elif isinstance(fmt, JsonSchemaFormatIn):
        schema = fmt.json_schema
        response_format = ResponseFormat(
            type="json_schema", schema=schema.schema, name=schema.name, strict=bool(schema.strict)
        )
    choice = body.tool_choice
    tool_choice = None
    if isinstance(choice, NamedToolChoice):
        tool_choice = ToolChoice(mode="tool", name=choice.function.name)
    elif choice == "required":
        tool_choice = ToolChoice(mode="required")
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
    return RequestOptions(
        temperature=body.temperature,
        top_p=body.top_p,
        max_output_tokens=body.max_completion_tokens or body.max_tokens,
        stop=stop,
        seed=body.seed,
        response_format=response_format,
        tool_choice=tool_choice,
        parallel_tool_calls=body.parallel_tool_calls if body.tools else None,
        end_user=body.user,
    )


def offered_tools(body: ChatCompletionRequest) -> tuple[ToolSpec, ...]:
    """The client's tools (``tool_choice: "none"`` offers none)."""
    if body.tool_choice == "none":
        return ()
    return tuple(
        ToolSpec(
            name=t.function.name,
            description=t.function.description,
            parameters=t.function.parameters or {"type": "object", "properties": {}},
        )
        for t in body.tools or ()
    )


async def gateway_input(
    body: ChatCompletionRequest,
    *,
    principal: Principal,
    uploads: UploadRepository,
    policy: UrlPolicy,
    settings: Settings,
    limiter: anyio.CapacityLimiter,
) -> GatewayInput:
    """Read the request; 400s name the OpenAI field (``messages[2].content[1].image_url``)."""
    history: list[Message] = []
    names: dict[str, str] = {}  # tool call id → the function it called
    for index, message in enumerate(body.messages):
        field = f"messages[{index}]"
        if isinstance(message, OpenAIUserMessage):
            history.append(
                await _user_row(
                    message,
                    field,
                    principal=principal,
                    uploads=uploads,
                    policy=policy,
                    settings=settings,
                    limiter=limiter,
                )
            )
        elif isinstance(message, OpenAIAssistantMessage):
            calls = [
                {"type": "tool_call", "id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in message.tool_calls or ()
            ]
            names.update((c.id, c.function.name) for c in message.tool_calls or ())
            history.append(Message(role="assistant", content=_text(message.content), parts=calls, meta={}))
        elif isinstance(message, OpenAIToolMessage):
            if message.tool_call_id not in names:
                raise Unprocessable(
                    f"No assistant tool call has the id {message.tool_call_id!r}.",
                    code="tool_call_unknown",
                    field=f"{field}.tool_call_id",
                )
            answer = {"toolCallId": message.tool_call_id, "toolName": names[message.tool_call_id]}
            history.append(
                Message(
                    role="tool",
                    content=_text(message.content),
                    parts=None,
                    meta={"frontend_tool_result": answer},
                )
            )
        else:  # system and developer
            history.append(Message(role="system", content=_text(message.content), parts=None, meta={}))
    effort = body.reasoning_effort
    reasoning = (
        None
        if effort is None
        else {"enableThinking": False}
        if effort == "none"
        else {"reasoningEffort": _EFFORT[effort]}
    )
    return GatewayInput(
        history=history, tools=offered_tools(body), request=request_options(body), reasoning=reasoning
    )


def _text(content: TextOnly | None) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(part.text for part in content)


async def _user_row(
    message: OpenAIUserMessage,
    field: str,
    *,
    principal: Principal,
    uploads: UploadRepository,
    policy: UrlPolicy,
    settings: Settings,
    limiter: anyio.CapacityLimiter,
) -> Message:
    """A user message's parts: text; inline images, PDFs (``file``) and audio (``input_audio``) checked
    like uploads; our signed image URLs resolved to the caller's uploads. At most
    ``IRIS_MAX_IMAGES_PER_MESSAGE`` images (of both kinds together), ``IRIS_MAX_DOCUMENTS_PER_MESSAGE``
    PDFs and ``IRIS_MAX_AUDIO_PER_MESSAGE`` clips, counted before any of them is decoded."""
    content: Sequence[UserPart] = (
        [TextContent(text=message.content)] if isinstance(message.content, str) else message.content
    )
    _check_counts(content, PartLimits.of(settings), field)
    parts: list[dict[str, Any]] = []
    linked: list[tuple[int, InboundAttachment]] = []  # our signed URLs, resolved together below
    for index, part in enumerate(content):
        where = f"{field}.content[{index}]"
        if isinstance(part, TextContent):
            if part.text:
                parts.append({"type": "text", "text": part.text})
        elif isinstance(part, FileContent):
            parts.append(await _inline_document(part, f"{where}.file", settings, limiter))
        elif isinstance(part, InputAudioContent):
            parts.append(await _inline_audio(part, f"{where}.input_audio", settings, limiter))
        elif part.image_url.url.startswith("data:"):
            parts.append(await _inline(part.image_url.url, f"{where}.image_url", settings, limiter))
        else:
            linked.append((len(parts), InboundAttachment(field=f"{where}.image_url", url=part.image_url.url)))
            parts.append({})
    if linked:
        urls = [image for _, image in linked]
        resolved = await canonical_user_parts(
            urls,
            user_id=principal.user_id,
            thread_id=thread_of(urls),
            policy=policy,
            uploads=uploads,
            limits=PartLimits.of(settings),
            field=field,
        )
        for (at, _), stored in zip(linked, resolved, strict=True):
            parts[at] = stored
    text = "\n".join(p["text"] for p in parts if p["type"] == "text")
    return Message(role="user", content=text, parts=parts, meta={})


def _check_counts(content: Sequence[UserPart], limits: PartLimits, field: str) -> None:
    """422 for too many parts of a kind, or a message with neither text nor an attachment."""
    kinds = {ImageContent: "image", FileContent: "document", InputAudioContent: "audio"}
    counted = [kinds[type(p)] for p in content if type(p) in kinds]
    for kind, most, noun in (
        ("image", limits.image, "images"),
        ("document", limits.document, "documents"),
        ("audio", limits.audio, "audio clips"),
    ):
        count = counted.count(kind)
        if count > most:
            raise Unprocessable(
                f"A message may carry at most {most} {noun}, not {count}.",
                code="too_many_images" if kind == "image" else f"too_many_{kind}",
                field=f"{field}.content",
            )
    if not counted and not any(isinstance(p, TextContent) and p.text.strip() for p in content):
        raise Unprocessable(
            "A message needs text or at least one attachment.", code="empty_message", field=field
        )


async def _inline(url: str, field: str, settings: Settings, limiter: anyio.CapacityLimiter) -> dict[str, Any]:
    """The part of an image sent as a ``data:`` URL, checked like an upload; its bytes stay in memory
    for this request only (the pipeline normalises them from there) and are never stored."""
    data = decode_data_url(url, max_bytes=settings.max_image_bytes, field=field)
    image = await inspect_inline(
        data, name="", max_pixels=settings.max_image_pixels, limiter=limiter, field=field
    )
    return {
        "type": "image",
        "path": "",
        "mimeType": image.mime_type,
        "name": image.name,
        "size": len(image.data),
        "width": image.width,
        "height": image.height,
        "sha256": image.sha256,
        "data": image.data,
    }


async def _inline_document(
    part: FileContent, field: str, settings: Settings, limiter: anyio.CapacityLimiter
) -> dict[str, Any]:
    """A PDF sent as ``file_data``, checked like an uploaded one and kept in memory only; its page
    texts ride along for a model that reads it as text. A ``file_id`` names OpenAI's own storage."""
    if part.file.file_data is None:
        if part.file.file_id is not None:
            raise Unprocessable(
                "A file_id names a file in OpenAI's Files API, which Iris does not hold: send the PDF"
                " itself as file_data (data:application/pdf;base64,…) with its filename.",
                code="file_source_unsupported",
                field=f"{field}.file_id",
            )
        raise Unprocessable(
            "A file part needs file_data (data:application/pdf;base64,…).",
            code="validation_failed",
            field=f"{field}.file_data",
        )
    where = f"{field}.file_data"
    data = decode_data_url(
        part.file.file_data,
        max_bytes=settings.max_document_bytes,
        field=where,
        noun="PDF",
        example="data:application/pdf;base64,…",
    )
    name = clean_filename(part.file.filename or "", "pdf")
    pdf = await inspect_inline_pdf(data, name=name, settings=settings, limiter=limiter, field=where)
    return pdf.part()


async def _inline_audio(
    part: InputAudioContent, field: str, settings: Settings, limiter: anyio.CapacityLimiter
) -> dict[str, Any]:
    """An ``input_audio`` clip (base64, no ``data:`` prefix), checked like uploaded audio and kept in
    memory only."""
    where = f"{field}.data"
    data = decode_base64(
        part.input_audio.data,
        max_bytes=settings.max_audio_bytes,
        field=where,
        noun="audio",
        invalid_code="invalid_base64",
    )
    audio = await inspect_inline_audio(
        data, declared=part.input_audio.format, settings=settings, limiter=limiter, field=where
    )
    return {
        "type": "audio",
        "path": "",
        "mimeType": audio.mime_type,
        "name": audio.name,
        "size": len(audio.data),
        "sha256": audio.sha256,
        "durationSeconds": audio.duration_seconds,
        "data": audio.data,
    }
