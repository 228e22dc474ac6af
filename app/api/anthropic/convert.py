"""An Anthropic Messages request → the unsaved history, tools and knobs of a stateless run.

Images are base64 (sniffed and bounded like an upload, never stored) or one of Iris's signed URLs (the
attachment URL policy: the caller's own upload); any other URL is refused. PDFs are base64 documents
checked like uploads (a ``text`` document source is read as text). ``tool_use`` blocks and
``tool_result`` blocks (text and images) become the rows a stored thread would hold, so the model sees
the same history either way. ``thinking`` and ``redacted_thinking`` blocks become the reasoning parts
Iris replays to the vendor that made them, their ``signature`` unchanged. ``cache_control`` anywhere
asks Anthropic models to cache the request's prefix (the request's top-level ``cache_control``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from iris.app.agui.input import InboundAttachment
from iris.app.api.anthropic.wire import (
    AssistantMessageIn,
    Base64Source,
    CountTokensRequest,
    DocumentBlockIn,
    ImageBlockIn,
    MessagesRequest,
    PlainTextSource,
    RedactedThinkingBlockIn,
    SystemMessageIn,
    TextBlockIn,
    ThinkingAdaptive,
    ThinkingBlockIn,
    ThinkingDisabled,
    ThinkingEnabled,
    ToolChoiceAny,
    ToolChoiceNone,
    ToolChoiceTool,
    ToolResultBlockIn,
    ToolUseBlockIn,
)
from iris.app.errors import Unprocessable
from iris.app.media.base64_data import decode_base64
from iris.app.media.inline_request import inspect_inline, inspect_inline_pdf
from iris.app.media.uploads import clean_filename
from iris.app.persistence.models import Message
from iris.app.persistence.repositories import UploadRepository
from iris.app.runs import PartLimits, canonical_user_parts, thread_of
from iris.app.security.auth import Principal
from iris.app.security.url_policy import UrlPolicy
from iris.app.settings import Settings
from iris.providers import RequestOptions, ResponseFormat, ToolChoice, ToolSpec

_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
"""``output_config.effort`` → Iris's effort (its highest is ``high``)."""
_EFFORT_BUDGETS = ((2048, "low"), (8192, "medium"))
"""``thinking.budget_tokens`` → Iris's effort: up to 2048 low, up to 8192 medium, above high."""


@dataclass(frozen=True, slots=True)
class Reader:
    """What reading a request needs: the caller, their uploads, the URL policy and the limits."""

    principal: Principal
    uploads: UploadRepository
    policy: UrlPolicy
    settings: Settings
    limiter: anyio.CapacityLimiter


@dataclass(slots=True)
class MessagesInput:
    """What :func:`iris.app.runs.stateless.chat.stateless_run` takes, read from one request."""

    history: list[Message] = field(default_factory=list)
    tools: tuple[ToolSpec, ...] = ()
    request: RequestOptions = field(default_factory=RequestOptions)
    reasoning: dict[str, Any] | None = None
    cached: bool = False
    """Whether any block (or the request) carries ``cache_control``."""


def offered_tools(body: CountTokensRequest) -> tuple[ToolSpec, ...]:
    """The client's tools (``tool_choice: none`` offers none)."""
    if isinstance(body.tool_choice, ToolChoiceNone):
        return ()
    return tuple(
        ToolSpec(name=tool.name, description=tool.description, parameters=tool.input_schema)
        for tool in body.tools or ()
    )


def reasoning_asked(body: CountTokensRequest) -> dict[str, Any] | None:
    """``thinking`` read like ``forwardedProps``: a budget is kept (and picks the effort for vendors
    that take one instead); adaptive is the model's own, at ``output_config.effort`` if given."""
    thinking = body.thinking
    if isinstance(thinking, ThinkingEnabled):
        effort = next((name for most, name in _EFFORT_BUDGETS if thinking.budget_tokens <= most), "high")
        return {"reasoningEffort": effort, "thinkingBudget": thinking.budget_tokens}
    if isinstance(thinking, ThinkingAdaptive):
        asked = body.output_config.effort if body.output_config else None
        return {"enableThinking": True, **({"reasoningEffort": _EFFORTS[asked]} if asked else {})}
    if isinstance(thinking, ThinkingDisabled):
        return {"enableThinking": False}
    return None


def request_options(body: MessagesRequest, *, cached: bool) -> RequestOptions:
    """The knobs (checked against the model by the core); ``top_k`` and caching go to Anthropic only."""
    choice = body.tool_choice
    tool_choice = (
        ToolChoice(mode="tool", name=choice.name)
        if isinstance(choice, ToolChoiceTool)
        else ToolChoice(mode="required")
        if isinstance(choice, ToolChoiceAny)
        else None
    )
    parallel = getattr(choice, "disable_parallel_tool_use", None)
    anthropic: dict[str, Any] = {}
    if body.top_k is not None:
        anthropic["top_k"] = body.top_k
    if cached:
        anthropic["cache_control"] = {"type": "ephemeral"}
    fmt = body.output_config.format if body.output_config else None
    return RequestOptions(
        temperature=body.temperature,
        top_p=body.top_p,
        max_output_tokens=body.max_tokens,
        stop=tuple(body.stop_sequences or ()),
        response_format=(
            ResponseFormat(type="json_schema", schema=fmt.schema, name="output", strict=True) if fmt else None
        ),
        tool_choice=tool_choice,
        parallel_tool_calls=False if parallel else None,
        end_user=body.metadata.user_id if body.metadata else None,
        extra={"anthropic": anthropic} if anthropic else {},
    )


async def messages_input(body: CountTokensRequest, reader: Reader) -> MessagesInput:
    """Read the request; 400s name the Anthropic field (``messages[2].content[1].source``)."""
    provider = body.model.partition("/")[0]
    given = MessagesInput(tools=offered_tools(body), reasoning=reasoning_asked(body))
    given.cached = body.cache_control is not None or _any_cache_control(body)
    system = body.system
    if system:
        text = system if isinstance(system, str) else "\n\n".join(b.text for b in system)
        given.history.append(Message(role="system", content=text, parts=None, meta={}))
    names: dict[str, str] = {}  # tool_use id → the tool it called
    for index, message in enumerate(body.messages):
        where = f"messages[{index}]"
        blocks: Sequence[Any] = (
            [TextBlockIn(text=message.content)] if isinstance(message.content, str) else message.content
        )
        if isinstance(message, AssistantMessageIn):
            given.history.append(_assistant_row(blocks, provider, names))
            continue
        if isinstance(message, SystemMessageIn):
            text = "\n\n".join(b.text for b in blocks)
            given.history.append(Message(role="system", content=text, parts=None, meta={}))
            continue
        user_blocks: list[Any] = []
        for at, block in enumerate(blocks):
            if isinstance(block, ToolResultBlockIn):
                given.history.append(await _tool_row(block, f"{where}.content[{at}]", names, reader))
            else:
                user_blocks.append((at, block))
        if user_blocks or not any(isinstance(b, ToolResultBlockIn) for b in blocks):
            given.history.append(await _user_row(user_blocks, where, reader))
    if isinstance(body, MessagesRequest):
        given.request = request_options(body, cached=given.cached)
    return given


def _any_cache_control(body: CountTokensRequest) -> bool:
    def marked(blocks: Sequence[Any]) -> bool:
        return any(
            getattr(b, "cache_control", None) is not None
            or (isinstance(b, ToolResultBlockIn) and not isinstance(b.content, str) and marked(b.content))
            for b in blocks
        )

    system = [] if body.system is None or isinstance(body.system, str) else body.system
    contents = [m.content for m in body.messages if not isinstance(m.content, str)]
    return marked(system) or marked(body.tools or []) or any(marked(c) for c in contents)


def _assistant_row(blocks: Sequence[Any], provider: str, names: dict[str, str]) -> Message:
    """Text, tool calls and the reasoning to replay (tagged with the provider the model ref names, so
    only that vendor gets it back); an unsigned thinking block is not replayable and is dropped."""
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlockIn):
            texts.append(block.text)
        elif isinstance(block, ThinkingBlockIn) and block.signature:
            parts.append(
                {
                    "type": "reasoning",
                    "provider": provider,
                    "text": block.thinking,
                    "signature": block.signature,
                }
            )
        elif isinstance(block, RedactedThinkingBlockIn):
            parts.append({"type": "reasoning", "provider": provider, "text": "", "redacted": block.data})
        elif isinstance(block, ToolUseBlockIn):
            names[block.id] = block.name
            arguments = json.dumps(block.input, separators=(",", ":"))
            parts.append({"type": "tool_call", "id": block.id, "name": block.name, "arguments": arguments})
    return Message(role="assistant", content="".join(texts), parts=parts, meta={})


async def _tool_row(block: ToolResultBlockIn, where: str, names: dict[str, str], reader: Reader) -> Message:
    """A ``tool_result``: its text, and its images (checked like uploads, held for the request) sent
    to the model as the tool's own output."""
    if block.tool_use_id not in names:
        raise Unprocessable(
            f"No assistant tool_use block has the id {block.tool_use_id!r}.",
            code="tool_call_unknown",
            field=f"{where}.tool_use_id",
        )
    name = names[block.tool_use_id]
    content = [TextBlockIn(text=block.content)] if isinstance(block.content, str) else block.content
    text = "\n".join(b.text for b in content if isinstance(b, TextBlockIn))
    images = [b for b in content if isinstance(b, ImageBlockIn)]
    if not images or block.is_error:
        answer = {"toolCallId": block.tool_use_id, "toolName": name}
        if block.is_error:
            answer["error"] = text or "the tool failed"
        return Message(role="tool", content=text, parts=None, meta={"frontend_tool_result": answer})
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for at, image in enumerate(content):
        if isinstance(image, ImageBlockIn):
            parts.append(await _image(image, f"{where}.content[{at}].source", reader))
    output = {"status": "succeeded", "toolCallId": block.tool_use_id, "toolName": name, "content": parts}
    return Message(role="tool", content=text, parts=None, meta={"tool_agent_output": output})


async def _user_row(blocks: Sequence[tuple[int, Any]], where: str, reader: Reader) -> Message:
    """Text, images and documents, counted before any is decoded; Iris's signed URLs resolved to the
    caller's uploads together."""
    _check_counts([b for _, b in blocks], PartLimits.of(reader.settings), where)
    parts: list[dict[str, Any]] = []
    linked: list[tuple[int, InboundAttachment]] = []
    for at, block in blocks:
        field_name = f"{where}.content[{at}]"
        if isinstance(block, TextBlockIn):
            if block.text:
                parts.append({"type": "text", "text": block.text})
        elif isinstance(block.source, PlainTextSource):
            title = f"{block.title}\n\n" if isinstance(block, DocumentBlockIn) and block.title else ""
            parts.append({"type": "text", "text": title + block.source.data})
        elif isinstance(block.source, Base64Source):
            source = f"{field_name}.source"
            parts.append(
                await _image(block, source, reader)
                if isinstance(block, ImageBlockIn)
                else await _document(block, block.source, source, reader)
            )
        else:
            url = InboundAttachment(
                field=f"{field_name}.source.url",
                url=block.source.url,
                kind="image" if isinstance(block, ImageBlockIn) else "document",
            )
            linked.append((len(parts), url))
            parts.append({})
    if linked:
        urls = [attachment for _, attachment in linked]
        resolved = await canonical_user_parts(
            urls,
            user_id=reader.principal.user_id,
            thread_id=thread_of(urls),
            policy=reader.policy,
            uploads=reader.uploads,
            limits=PartLimits.of(reader.settings),
            field=where,
        )
        for (at, _), stored in zip(linked, resolved, strict=True):
            parts[at] = stored
    text = "\n".join(p["text"] for p in parts if p["type"] == "text")
    return Message(role="user", content=text, parts=parts, meta={})


def _check_counts(blocks: Sequence[Any], limits: PartLimits, where: str) -> None:
    """422 for too many images or PDFs in one message, or a message with nothing in it."""
    images = sum(isinstance(b, ImageBlockIn) for b in blocks)
    documents = sum(
        isinstance(b, DocumentBlockIn) and not isinstance(b.source, PlainTextSource) for b in blocks
    )
    for count, most, noun, code in (
        (images, limits.image, "images", "too_many_images"),
        (documents, limits.document, "documents", "too_many_document"),
    ):
        if count > most:
            raise Unprocessable(
                f"A message may carry at most {most} {noun}, not {count}.",
                code=code,
                field=f"{where}.content",
            )
    if not blocks or not any(not isinstance(b, TextBlockIn) or b.text.strip() for b in blocks):
        raise Unprocessable(
            "A message needs text or at least one attachment.", code="empty_message", field=where
        )


async def _image(block: ImageBlockIn, where: str, reader: Reader) -> dict[str, Any]:
    """An image given as base64, checked like an upload; its bytes stay in memory for this request."""
    if not isinstance(block.source, Base64Source):
        raise Unprocessable(
            "An image in a tool_result must be base64.", code="attachment_url_rejected", field=where
        )
    settings = reader.settings
    data = decode_base64(
        block.source.data,
        max_bytes=settings.max_image_bytes,
        field=f"{where}.data",
        noun="image",
        invalid_code="invalid_base64",
    )
    image = await inspect_inline(
        data, name="", max_pixels=settings.max_image_pixels, limiter=reader.limiter, field=f"{where}.data"
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


async def _document(
    block: DocumentBlockIn, source: Base64Source, where: str, reader: Reader
) -> dict[str, Any]:
    """A base64 PDF, checked like an uploaded one and kept in memory only; its page texts ride along
    for a model that reads it as text."""
    settings = reader.settings
    data = decode_base64(
        source.data,
        max_bytes=settings.max_document_bytes,
        field=f"{where}.data",
        noun="PDF",
        invalid_code="invalid_base64",
    )
    name = clean_filename(block.title or "", "pdf")
    pdf = await inspect_inline_pdf(
        data, name=name, settings=settings, limiter=reader.limiter, field=f"{where}.data"
    )
    return pdf.part()
