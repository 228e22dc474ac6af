"""The provider SPI: what a vendor plugin implements and what it is given.

A plugin package declares an entry point in the ``iris.providers`` group that names a *factory*:
a callable taking a :class:`ProviderContext` and returning a :class:`Provider`. Built-ins register
the same way (see ``pyproject.toml``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import httpx
import msgspec

from iris.providers.events import ProviderEvent
from iris.providers.messages import Message, RequestOptions
from iris.providers.wire import WireStruct

SPEC_VERSION = "4"
"""Bumped on any change to this module, ``messages``, ``events`` or ``errors``.

2: reasoning events, ``ReasoningPart``, ``RequestOptions.reasoning``, ``Capabilities.reasoning``, and
the reasoning/cached/image counts of ``Usage``.
3: ``Capabilities.tool_result_images`` and ``ToolResultPart.images``. Compatible: a plugin speaking 2
still loads (it declares nothing, so tool images reach it in a user message). Compatible additions to 3
(no bump): the sampling and format knobs of ``RequestOptions`` (``top_p``, ``stop``, ``seed``,
``response_format``, ``tool_choice``, ``parallel_tool_calls``, ``end_user``) and
``Capabilities.parameters`` — a plugin that declares none is never sent any of them (nor
``temperature`` or ``max_output_tokens`` from a client).
4: ``DocumentPart`` and ``AudioPart``, and ``Capabilities.documents`` / ``Capabilities.audio``.
Compatible: a plugin speaking 2 or 3 still loads; it declares neither, so it is never sent either (the
core refuses such a part with ``unsupported_part``, or sends a document's text instead). Compatible
addition to 4 (no bump): the optional ``vendor_facts`` member (:mod:`iris.providers.vendor_facts`)."""

COMPATIBLE_SPEC_VERSIONS = frozenset({"2", "3", SPEC_VERSION})
"""The SPI versions a plugin may speak and still load."""

UrlFetch = Literal["none", "public_https"]
ByteMeasure = Literal["raw", "base64"]
ModelType = Literal["text", "vision", "multimodal"]
ToolResultImages = Literal["native", "user_message"]
"""How images a tool returned reach the model: inside the tool result (``native``: Anthropic's
``tool_result`` content, Gemini 3's function response parts) or, for APIs whose tool messages carry
text only (Chat Completions, Ollama), in a user message right after the results (``user_message``)."""


class ReasoningSupport(WireStruct):
    """Whether a model reasons, and how: ``streamed`` text, ``encrypted`` (opaque blocks sent back),
    ``effort`` (low/medium/high) and ``budget`` (a token budget) are what a request can control."""

    supported: bool = False
    streamed: bool = False
    encrypted: bool = False
    effort: bool = False
    budget: bool = False


class ParameterSupport(WireStruct):
    """Which ``RequestOptions`` knobs a model honours (``json_object``/``json_schema``: the two kinds of
    ``response_format``). A knob it does not honour is refused before the request, never dropped."""

    temperature: bool = False
    top_p: bool = False
    stop: bool = False
    seed: bool = False
    max_output_tokens: bool = False
    json_object: bool = False
    json_schema: bool = False
    tool_choice: bool = False
    parallel_tool_calls: bool = False


ALL_PARAMETERS = ParameterSupport(
    temperature=True,
    top_p=True,
    stop=True,
    seed=True,
    max_output_tokens=True,
    json_object=True,
    json_schema=True,
    tool_choice=True,
    parallel_tool_calls=True,
)
"""Every knob: what an OpenAI-compatible vendor takes."""


class DocumentSupport(WireStruct):
    """Which documents a model reads natively: PDF or not, and the vendor's caps on one request
    (``max_pages`` pages and ``max_bytes`` raw bytes over every document in it; 0: none published).
    A model that does not read PDFs gets their text (and page images) from the core instead."""

    pdf: bool = False
    max_pages: int = 0
    max_bytes: int = 0


class AudioSupport(WireStruct):
    """Which audio a model hears natively: the MIME types (``audio/wav``, ``audio/mpeg``…), and the
    vendor's cap on the seconds in one request (0: none published). Empty ``mime_types``: no audio."""

    mime_types: tuple[str, ...] = ()
    max_seconds: float = 0.0

    @property
    def supported(self) -> bool:
        return bool(self.mime_types)


class Capabilities(WireStruct):
    """What a model takes, as data (no I/O to compute it); the core checks it before any vendor call."""

    vision: bool
    image_mime_types: tuple[str, ...] = ()
    max_images: int = 0
    max_image_bytes: int = 0
    image_bytes_measured_on: ByteMeasure = "raw"
    max_image_edge_px: int | None = None
    recommended_long_edge_px: int | None = None
    url_fetch: UrlFetch = "none"
    tools: bool = False
    max_request_bytes: int = 0
    """The vendor's limit on one whole request body (JSON with every inline image base64-encoded,
    the text, tools), 0 when there is none: the core downscales images to fit it, or refuses."""
    reasoning: ReasoningSupport = msgspec.field(default_factory=ReasoningSupport)
    parameters: ParameterSupport = msgspec.field(default_factory=ParameterSupport)
    tool_result_images: ToolResultImages = "user_message"
    documents: DocumentSupport = msgspec.field(default_factory=DocumentSupport)
    """Declared only for a ``multimodal`` model: ``vision`` reads images and nothing more."""
    audio: AudioSupport = msgspec.field(default_factory=AudioSupport)


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A catalogue row as a provider sees it. ``options`` come from the row (never secrets)."""

    provider: str
    model_id: str
    type: ModelType
    supports_tools: bool = False
    options: Mapping[str, Any] = msgspec.field(default_factory=dict)


class ProviderContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a factory gets: the environment to read its keys from, and the shared HTTP client."""

    environ: Mapping[str, str]
    http: httpx.AsyncClient


@runtime_checkable
class Provider(Protocol):
    """A vendor. ``build_request`` is pure (testable with no network); ``stream`` does the call.

    Optional members (see :mod:`iris.providers.options`; a provider without them still loads):
    ``model_options: Mapping[str, OptionSpec]``, the ``ModelSpec.options`` keys it reads, so the
    catalogue can refuse unknown or mistyped ones; and ``key_env(model) -> str | None``, the environment
    variable holding the model's API key, so a model whose key is not set is listed unavailable and
    refused before a run starts. A third, ``vendor_facts: VendorFacts`` (see
    :mod:`iris.providers.vendor_facts`),
    declares the vendor's published counting figures (image formula, tokens per PDF page and per second
    of audio, telemetry name); without it the core estimates none and names the provider by its id.
    """

    id: str
    spec_version: str

    def capabilities(self, model: ModelSpec) -> Capabilities:
        """What this model takes. Data only: no I/O."""
        ...

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        """The vendor request body; raises ``UnsupportedPartError`` for a part it cannot map."""
        ...

    def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        """Call the vendor and yield neutral events; raises ``ProviderError`` on failure."""
        ...


ProviderFactory = Callable[[ProviderContext], Provider]
