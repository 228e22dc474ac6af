"""Neutral conversation types every provider translates from.

Images arrive already normalised by the core (oriented, stripped, in a type and size the model takes)
and carry exactly one of ``data`` (send inline) or ``url`` (a fresh signed URL the vendor may fetch):
the core decides delivery, the provider only maps it to the vendor's own image block.

Documents (PDF) and audio arrive inline only: sniffed, bounded and measured by the core (``pages``,
``seconds``), so a provider checks them against its ``Capabilities`` without opening the bytes.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Role = Literal["system", "user", "assistant", "tool"]


class TextPart(msgspec.Struct, tag="text", tag_field="type", frozen=True, kw_only=True):
    text: str


class ImagePart(msgspec.Struct, tag="image", tag_field="type", frozen=True, kw_only=True):
    """One image. ``data`` holds the encoded bytes to inline; ``url`` a signed URL to fetch."""

    mime_type: str
    width: int
    height: int
    data: bytes | None = None
    url: str | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError("an ImagePart carries exactly one of data or url")


class DocumentPart(msgspec.Struct, tag="document", tag_field="type", frozen=True, kw_only=True):
    """One document (today a PDF): its bytes, type, file name and page count, as the core measured it."""

    mime_type: str
    data: bytes
    name: str = ""
    pages: int = 0


class AudioPart(msgspec.Struct, tag="audio", tag_field="type", frozen=True, kw_only=True):
    """One audio clip (WAV, MP3…): its bytes, type, file name and duration, as the core measured it."""

    mime_type: str
    data: bytes
    name: str = ""
    seconds: float = 0.0


class ToolCallPart(msgspec.Struct, tag="tool_call", tag_field="type", frozen=True, kw_only=True):
    """A call the assistant made; ``arguments`` is the JSON text the model produced."""

    id: str
    name: str
    arguments: str


class ToolResultPart(msgspec.Struct, tag="tool_result", tag_field="type", frozen=True, kw_only=True):
    """The answer to a tool call: text, and the images the tool returned (already normalised and
    inline). ``images`` is only ever filled for a model whose ``Capabilities.tool_result_images`` is
    ``"native"``; for any other the core sends them in a user message after the results instead."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    images: tuple[ImagePart, ...] = ()


class ReasoningPart(msgspec.Struct, tag="reasoning", tag_field="type", frozen=True, kw_only=True):
    """What the assistant thought, kept so a later request can send it back as the vendor requires.

    ``provider`` is the vendor that produced it: signatures are only valid there, so every other
    provider drops the part. ``signature`` is the opaque proof sent back byte-identical;
    ``redacted`` an opaque block with no readable text; ``tool_call_id`` the function call a Gemini
    thought signature rode on.
    """

    provider: str
    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    tool_call_id: str | None = None


Part = TextPart | ImagePart | DocumentPart | AudioPart | ToolCallPart | ToolResultPart | ReasoningPart


class Message(msgspec.Struct, frozen=True, kw_only=True):
    """One turn. ``user`` carries text, images, documents and audio, ``assistant`` text and tool calls,
    ``tool`` results."""

    role: Role
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        """The text parts joined (what a text-only view of the turn says)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ImagePart))

    @property
    def images_sent(self) -> tuple[ImagePart, ...]:
        """Every image this turn sends: its own image parts and those inside its tool results (where a
        vendor takes them there, ``Capabilities.tool_result_images == "native"``)."""
        inside = (i for p in self.parts if isinstance(p, ToolResultPart) for i in p.images)
        return (*self.images, *inside)

    @property
    def documents(self) -> tuple[DocumentPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, DocumentPart))

    @property
    def audio(self) -> tuple[AudioPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, AudioPart))


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A tool the model may call: a name, what it does, and a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


ReasoningEffort = Literal["low", "medium", "high"]


class ReasoningRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Reasoning was asked for: an effort, and a token budget for vendors that take one."""

    effort: ReasoningEffort = "medium"
    budget_tokens: int | None = None


class ResponseFormat(msgspec.Struct, frozen=True, kw_only=True):
    """The answer must be JSON: any object (``json_object``), or one matching ``schema`` (``json_schema``,
    named ``name``; ``strict`` asks the vendor to enforce it exactly)."""

    type: Literal["json_object", "json_schema"]
    schema: dict[str, Any] | None = None
    name: str = "response"
    strict: bool = False


class ToolChoice(msgspec.Struct, frozen=True, kw_only=True):
    """Which tools the model must use: ``required`` (at least one), or the ``tool`` called ``name``.
    (No choice means the model decides; the core itself handles "no tools" by offering none.)"""

    mode: Literal["required", "tool"]
    name: str | None = None


class RequestOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Per-request knobs; ``extra`` holds vendor options keyed by provider id (Vercel's providerOptions).

    ``reasoning`` is ``None`` when reasoning is off: the provider then asks for none. The sampling and
    format knobs (``temperature`` … ``end_user``) are set only where the model's
    ``Capabilities.parameters`` says it honours them (the core checks before the request); ``None`` (or
    empty) means the vendor's default."""

    system: str | None = None
    reasoning: ReasoningRequest | None = None
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    response_format: ResponseFormat | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    """``False``: at most one tool call per turn."""
    end_user: str | None = None
    """The caller's own id for its end user, passed on where the vendor takes one (abuse monitoring)."""
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
