"""``RunAgentInput`` (AG-UI 1.0) and the inbound message shapes Iris accepts.

Tolerant where the protocol says so — unknown fields, message roles and part types are skipped —
and strict where it does not: a known field with the wrong type is a 422 naming the field, and
the part shapes SPEC §3 refuses (``image_url``, inline bytes, ``file`` handles, video, types
that are not accepted uploads) each get their own ``code``. Images, documents (PDF) and audio (WAV,
MP3) arrive as AG-UI 1.0 ``image``/``document``/``audio`` parts with a ``url`` source, or as the
legacy ``binary`` part; documents and audio may also come inline (a ``data`` source, ``binary``
``data``), images may not. Only parsing happens here; URLs and upload
ids are resolved against storage and the database by :mod:`iris.app.runs.content.parts`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import msgspec

from iris.app.errors import Unprocessable
from iris.app.mime import ACCEPTED_AUDIO, ACCEPTED_DOCUMENTS, EXTENSION_BY_MIME
from iris.providers.wire import WireStruct

log = logging.getLogger("iris.agui")

T = TypeVar("T")


class ToolIn(WireStruct):
    """A tool the client declares (a frontend tool)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None


class ContextIn(WireStruct):
    description: str
    value: str


class ResumeEntryIn(WireStruct):
    interrupt_id: str
    status: Literal["resolved", "cancelled"]
    payload: Any = None


class RunAgentInput(WireStruct):
    """The POST body of ``/agent/runs``. Messages are checked one by one (see :func:`parse_messages`)."""

    thread_id: str
    run_id: str
    messages: list[dict[str, Any]]
    protocol_version: str | None = None
    parent_run_id: str | None = None
    state: Any = None
    tools: list[ToolIn] = msgspec.field(default_factory=list)
    context: list[ContextIn] = msgspec.field(default_factory=list)
    forwarded_props: Any = None
    resume: list[ResumeEntryIn] | None = None


class _ToolCallFunction(WireStruct):
    name: str
    arguments: str


class _ToolCallIn(WireStruct):
    id: str
    function: _ToolCallFunction


class _UserMessage(WireStruct):
    id: str
    content: str | list[dict[str, Any]]


class _AssistantMessage(WireStruct):
    id: str
    content: str | None = None
    tool_calls: list[_ToolCallIn] | None = None


class _ToolMessage(WireStruct):
    id: str
    content: str | list[dict[str, Any]]
    tool_call_id: str
    error: str | None = None


class _TextMessage(WireStruct):  # system, developer
    id: str
    content: str


class _Source(WireStruct):
    type: str
    value: str
    mime_type: str | None = None


class _TextPart(WireStruct):
    text: str


class _ImagePart(WireStruct):
    source: _Source
    metadata: Any = None


class _BinaryPart(WireStruct):
    mime_type: str
    id: str | None = None
    url: str | None = None
    data: str | None = None
    filename: str | None = None


AttachmentKind = Literal["image", "document", "audio"]


@dataclass(frozen=True, slots=True)
class InboundAttachment:
    """An image, document or audio clip a user message names: a signed URL of our storage, an upload
    id (legacy binary), or — documents and audio only — its bytes as base64 ``data`` with the
    ``mime_type`` the part declares (still undecoded: :mod:`iris.app.media.inline_uploads` checks them).
    ``kind`` is what the part said it is; the upload it resolves to must agree."""

    field: str
    url: str | None = None
    upload_id: str | None = None
    filename: str | None = None
    kind: AttachmentKind = "image"
    data: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class InboundUser:
    id: str
    parts: tuple[str | InboundAttachment, ...]
    field: str


@dataclass(frozen=True, slots=True)
class InboundTool:
    id: str
    tool_call_id: str
    content: str
    error: str | None
    field: str


@dataclass(frozen=True, slots=True)
class InboundOther:
    """A message Iris keeps no copy of from the client (assistant, system …); its id still counts."""

    id: str
    role: str
    field: str = "messages"


InboundMessage = InboundUser | InboundTool | InboundOther

_KIND_BY_MIME: dict[str, AttachmentKind] = {
    **dict.fromkeys(EXTENSION_BY_MIME, "image"),
    **dict.fromkeys(ACCEPTED_DOCUMENTS, "document"),
    **dict.fromkeys(ACCEPTED_AUDIO, "audio"),
}
"""Every type a user message may carry, and the kind of part it is."""
_WANTED: dict[AttachmentKind, str] = {
    "image": "image type (PNG, JPEG or WebP)",
    "document": "document type (PDF)",
    "audio": "audio type (WAV or MP3)",
}


def check_protocol_version(version: str | None) -> None:
    """Serve any 1.x (and pre-versioning clients); refuse another major before the stream."""
    if version is None:
        return
    major = version.split(".", 1)[0]
    if major.isdigit() and major != "1":
        raise Unprocessable(
            f"AG-UI protocol {version} is not served here; this server speaks 1.x.",
            code="protocol_version_unsupported",
            field="protocolVersion",
        )


def parse_messages(raw: list[dict[str, Any]], *, inline_images: bool = False) -> list[InboundMessage]:
    """Typed inbound messages, in order; unknown roles (reasoning, activity, …) are skipped.
    ``inline_images``: a surface that stores images sent as bytes (the AI SDK's) takes them inline."""
    out: list[InboundMessage] = []
    for index, message in enumerate(raw):
        field = f"messages[{index}]"
        role = message.get("role")
        if role == "user":
            user = _convert(message, _UserMessage, field)
            out.append(
                InboundUser(
                    id=user.id,
                    parts=_user_parts(user.content, f"{field}.content", inline_images=inline_images),
                    field=field,
                )
            )
        elif role == "tool":
            tool = _convert(message, _ToolMessage, field)
            content = tool.content if isinstance(tool.content, str) else _text_only(tool.content)
            out.append(
                InboundTool(
                    id=tool.id, tool_call_id=tool.tool_call_id, content=content, error=tool.error, field=field
                )
            )
        elif role == "assistant":
            out.append(
                InboundOther(id=_convert(message, _AssistantMessage, field).id, role="assistant", field=field)
            )
        elif role in ("system", "developer"):
            out.append(
                InboundOther(id=_convert(message, _TextMessage, field).id, role=str(role), field=field)
            )
        else:
            log.info("skipping a message with role %r at %s", role, field)
    return out


def _user_parts(
    content: str | list[dict[str, Any]], field: str, *, inline_images: bool = False
) -> tuple[str | InboundAttachment, ...]:
    if isinstance(content, str):
        return (content,)
    parts: list[str | InboundAttachment] = []
    for index, part in enumerate(content):
        where = f"{field}[{index}]"
        kind = part.get("type")
        if kind == "text":
            parts.append(_convert(part, _TextPart, where).text)
        elif kind in ("image", "document", "audio"):
            parts.append(_media(_convert(part, _ImagePart, where), where, kind, inline_images=inline_images))
        elif kind == "binary":
            parts.append(_binary(_convert(part, _BinaryPart, where), where))
        elif kind == "image_url":
            raise Unprocessable(
                "OpenAI-style 'image_url' parts are not accepted: upload the image (POST /api/files) and "
                "send the AG-UI image part it returns.",
                code="image_url_part_unsupported",
                field=where,
            )
        elif kind == "video":
            raise Unprocessable(
                "video parts are not accepted: images (PNG, JPEG, WebP), PDFs and audio (WAV, MP3) are.",
                code="media_kind_unsupported",
                field=where,
            )
        else:
            log.info("skipping a content part of type %r at %s", kind, where)
    return tuple(parts)


def _media(
    part: _ImagePart, field: str, kind: AttachmentKind, *, inline_images: bool = False
) -> InboundAttachment:
    """An ``image``, ``document`` or ``audio`` part; ``metadata.filename`` is kept as its name."""
    source = part.source
    filename = part.metadata.get("filename") if isinstance(part.metadata, dict) else None
    if source.type == "data":
        if kind == "image" and not inline_images:
            raise inline_data_unsupported(f"{field}.source")
        if source.mime_type is None:
            raise Unprocessable(
                f"A 'data' source needs its 'mimeType': an {_WANTED[kind]}.",
                code="validation_failed",
                field=f"{field}.source.mimeType",
            )
        _check_mime(source.mime_type, f"{field}.source.mimeType", kind)
        return InboundAttachment(
            field=f"{field}.source.value",
            data=source.value,
            mime_type=source.mime_type,
            filename=_str_or_none(filename),
            kind=kind,
        )
    if source.type == "file":
        raise Unprocessable(
            f"A provider's file handle cannot be read here: upload the {kind} (POST /api/files) and send"
            " the URL it returns as a 'url' source.",
            code="file_source_unsupported",
            field=f"{field}.source",
        )
    if source.type != "url":
        raise Unprocessable(
            f"Unknown {kind} source type {source.type!r}.",
            code="validation_failed",
            field=f"{field}.source.type",
        )
    if source.mime_type is not None:
        _check_mime(source.mime_type, f"{field}.source.mimeType", kind)
    return InboundAttachment(
        field=f"{field}.source.value", url=source.value, filename=_str_or_none(filename), kind=kind
    )


def _binary(part: _BinaryPart, field: str) -> InboundAttachment:
    kind = _check_mime(part.mime_type, f"{field}.mimeType")
    if part.data is not None:
        if kind == "image":
            raise inline_data_unsupported(f"{field}.data")
        return InboundAttachment(
            field=f"{field}.data", data=part.data, mime_type=part.mime_type, filename=part.filename, kind=kind
        )
    if part.url is not None:
        return InboundAttachment(field=f"{field}.url", url=part.url, filename=part.filename, kind=kind)
    if part.id is not None:
        return InboundAttachment(field=f"{field}.id", upload_id=part.id, filename=part.filename, kind=kind)
    raise Unprocessable(
        "A binary part needs a 'url' or an upload 'id'.", code="validation_failed", field=field
    )


def _check_mime(mime_type: str, field: str, kind: AttachmentKind | None = None) -> AttachmentKind:
    """The kind of part this type belongs to; 422 for a type Iris does not take (or another kind's)."""
    found = _KIND_BY_MIME.get(mime_type.lower())
    if found is None or (kind is not None and found != kind):
        wanted = _WANTED[kind or "image"]
        accepted = f"an accepted {wanted}" if kind else "an accepted type (PNG, JPEG, WebP, PDF, WAV or MP3)"
        raise Unprocessable(f"{mime_type!r} is not {accepted}.", code="unsupported_media_type", field=field)
    return found


def inline_data_unsupported(field: str) -> Unprocessable:
    """Inline bytes where they are not taken: images (SPEC §3: upload first) and surfaces without a
    thread to store a document or audio clip in."""
    return Unprocessable(
        "Inline bytes are not accepted here: upload the file (POST /api/files) and send its URL.",
        code="inline_data_unsupported",
        field=field,
    )


def _text_only(parts: list[dict[str, Any]]) -> str:
    return "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _convert(value: dict[str, Any], kind: type[T], field: str) -> T:
    try:
        return msgspec.convert(value, type=kind)
    except msgspec.ValidationError as exc:
        message = str(exc)
        where = message.rpartition(" - at `$")[2].rstrip("`") if " - at `$" in message else ""
        raise Unprocessable(f"{field}: {message}", code="validation_failed", field=f"{field}{where}") from exc
