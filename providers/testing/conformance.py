"""The provider conformance suite: what every provider, built in or plugged in, must honour.

A provider honours its declared capabilities and nothing more: a declared image type becomes the
vendor's own image block carrying the exact bytes (never pasted into text); an undeclared type, an image
to a text model, or a URL to a provider that cannot fetch one raises :class:`UnsupportedPartError`
(never a silent drop); declared tools reach the request; ``build_request`` is pure; a stream (where the
provider can run without a network, or against a loopback fake) is well formed.

Use it from pytest by subclassing :class:`ProviderConformance` in a test module::

    class TestEchoConformance(ProviderConformance):
        factory = staticmethod(create)
        vision_model = ModelSpec(provider="echo", model_id="e1", type="vision")

or call :func:`check_provider` from anything else.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import httpx
import msgspec
import pytest

from iris.providers.errors import ProviderError, UnsupportedPartError
from iris.providers.events import (
    Finish,
    ProviderEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallEnd,
    ToolCallStart,
)
from iris.providers.messages import (
    AudioPart,
    DocumentPart,
    ImagePart,
    Message,
    ReasoningPart,
    ReasoningRequest,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from iris.providers.spec import SPEC_VERSION, ModelSpec, Provider, ProviderContext
from iris.providers.testing.images import image_bytes
from iris.providers.vendor_facts import VendorFacts

FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WEBP"}
"""The types the core converts to: a vision model must declare at least one of them."""
TOOL = ToolSpec(
    name="current_time", description="The time now.", parameters={"type": "object", "properties": {}}
)
THINK = ReasoningRequest(effort="high", budget_tokens=2048)
SIGNED_URL = "https://storage.example.com/storage/v1/object/sign/iris/derived/ab/x.png?token=t"


def ask(*parts: TextPart | ImagePart | DocumentPart | AudioPart) -> list[Message]:
    """One user message: a question, then ``parts``."""
    return [Message(role="user", parts=(TextPart(text="What is in this picture?"), *parts))]


def _text_values(value: Any) -> Iterator[str]:
    """Every string stored under a key named like a text field, anywhere in the request."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in {"text", "content", "prompt"} and isinstance(item, str):
                yield item
            yield from _text_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _text_values(item)


def _dump(request: Any) -> str:
    return json.dumps(request, default=str)


def check_identity(provider: Provider) -> None:
    """The SPI version Iris speaks, and an id fit for ``provider/modelId`` references."""
    assert provider.spec_version == SPEC_VERSION, f"{provider.id} speaks SPI {provider.spec_version!r}"
    assert provider.id, "a provider needs an id"
    assert "/" not in provider.id, "a provider id may not contain '/' (it names models as provider/modelId)"


def check_vendor_facts(provider: Provider, vision_model: ModelSpec) -> None:
    """Declared counting figures (``vendor_facts``, optional) are a :class:`VendorFacts` the core can use:
    an image formula giving a positive count, figures above zero, a telemetry name that is not empty."""
    if not hasattr(provider, "vendor_facts"):
        return
    facts = provider.vendor_facts
    assert isinstance(facts, VendorFacts), f"{provider.id}.vendor_facts must be a VendorFacts"
    if facts.image_formula is not None:
        tokens = facts.image_formula.tokens(1024, 1024, vision_model.model_id, "high")
        assert isinstance(tokens, int), f"{facts.image_formula.name} counts {tokens!r}, not a whole number"
        assert tokens > 0, f"{facts.image_formula.name} counts {tokens} tokens for a 1024x1024 image"
    for figure in (facts.pdf_page_tokens, facts.audio_second_tokens):
        assert figure is None or figure > 0, f"{provider.id} declares {figure!r} tokens per page or second"
    assert facts.telemetry_name is None or facts.telemetry_name, "a telemetry name may not be empty"


def check_capabilities(provider: Provider, vision_model: ModelSpec) -> None:
    """A vision model declares something the core can deliver; capabilities are pure data."""
    caps = provider.capabilities(vision_model)
    assert caps == provider.capabilities(vision_model), "capabilities must be the same on every call"
    msgspec.json.encode(caps)  # data, not objects
    assert caps.vision, f"{provider.id} should see images with {vision_model.model_id}"
    assert any(m in FORMATS for m in caps.image_mime_types), f"{provider.id} declares none of PNG/JPEG/WebP"
    assert caps.max_images > 0, "a vision model takes at least one image"
    assert caps.max_image_bytes > 0, "a vision model declares its image size limit"
    assert caps.max_request_bytes >= 0


def check_declared_images(provider: Provider, vision_model: ModelSpec) -> None:
    """Each declared type reaches the request as an image block with the exact bytes, not as text."""
    caps = provider.capabilities(vision_model)
    for mime in (m for m in caps.image_mime_types if m in FORMATS):
        data = image_bytes(FORMATS[mime], size=(32, 24))
        part = ImagePart(mime_type=mime, width=32, height=24, data=data)
        request = provider.build_request(ask(part), vision_model, RequestOptions())
        assert request == provider.build_request(ask(part), vision_model, RequestOptions()), "not pure"
        dumped = _dump(request)
        encoded = base64.b64encode(data).decode()
        assert encoded in dumped or hashlib.sha256(data).hexdigest() in dumped, (
            f"{provider.id}: the {mime} bytes (base64, or their sha256) are not in the request"
        )
        assert not any(encoded in text for text in _text_values(request)), "image pasted into text"


def check_undeclared_image_refused(provider: Provider, vision_model: ModelSpec) -> None:
    """A type the model does not declare is refused, never dropped."""
    assert "image/tiff" not in provider.capabilities(vision_model).image_mime_types
    part = ImagePart(mime_type="image/tiff", width=8, height=8, data=image_bytes("TIFF", size=(8, 8)))
    with pytest.raises(UnsupportedPartError):
        provider.build_request(ask(part), vision_model, RequestOptions())


def check_text_model_refuses_images(provider: Provider, text_model: ModelSpec) -> None:
    """A text model sees no images and refuses one."""
    assert provider.capabilities(text_model).vision is False, f"{text_model.model_id} should be text-only"
    part = ImagePart(mime_type="image/png", width=8, height=8, data=image_bytes("PNG", size=(8, 8)))
    with pytest.raises(UnsupportedPartError):
        provider.build_request(ask(part), text_model, RequestOptions())


def check_url_images_follow_url_fetch(provider: Provider, vision_model: ModelSpec) -> None:
    """A URL goes into the request only where the model declares it fetches URLs."""
    caps = provider.capabilities(vision_model)
    part = ImagePart(mime_type="image/png", width=8, height=8, url=SIGNED_URL)
    if caps.url_fetch == "none":
        with pytest.raises(UnsupportedPartError):
            provider.build_request(ask(part), vision_model, RequestOptions())
    else:
        assert SIGNED_URL in _dump(provider.build_request(ask(part), vision_model, RequestOptions()))


PDF_STUB = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
"""Document bytes for ``build_request`` checks (no provider opens them there)."""
WAV_STUB = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(20) + b"data\x00\x00\x00\x00"


def check_documents_and_audio_follow_capabilities(provider: Provider, multimodal_model: ModelSpec) -> None:
    """A PDF or WAV the model declares reaches the request with its bytes (not as text); one it does
    not declare is refused, never dropped."""
    caps = provider.capabilities(multimodal_model)
    parts: list[tuple[bool, DocumentPart | AudioPart]] = [
        (caps.documents.pdf, DocumentPart(mime_type="application/pdf", data=PDF_STUB, name="a.pdf", pages=1)),
        (
            "audio/wav" in caps.audio.mime_types,
            AudioPart(mime_type="audio/wav", data=WAV_STUB, name="a.wav", seconds=0.5),
        ),
    ]
    for declared, part in parts:
        if not declared:
            with pytest.raises(UnsupportedPartError):
                provider.build_request(ask(part), multimodal_model, RequestOptions())
            continue
        request = provider.build_request(ask(part), multimodal_model, RequestOptions())
        dumped = _dump(request)
        encoded = base64.b64encode(part.data).decode()
        assert encoded in dumped or hashlib.sha256(part.data).hexdigest() in dumped, (
            f"{provider.id}: the {part.mime_type} bytes (base64, or their sha256) are not in the request"
        )
        assert not any(encoded in text for text in _text_values(request)), (
            f"{part.mime_type} pasted into text"
        )


def check_vision_model_reads_no_documents(provider: Provider, vision_model: ModelSpec) -> None:
    """``vision`` means images only: documents and audio are for ``multimodal`` rows."""
    caps = provider.capabilities(vision_model)
    assert not caps.documents.pdf, f"{provider.id}: a vision row declares PDFs (make it multimodal)"
    assert not caps.audio.supported, f"{provider.id}: a vision row declares audio (make it multimodal)"


def check_declared_tools(provider: Provider, vision_model: ModelSpec) -> None:
    """Declared tools reach the request; a model without tools is not asked to check."""
    model = msgspec.structs.replace(vision_model, supports_tools=True)
    if not provider.capabilities(model).tools:
        return
    assert TOOL.name in _dump(provider.build_request(ask(), model, RequestOptions(tools=(TOOL,))))


def _tool_loop(reasoning: ReasoningPart) -> list[Message]:
    """A tool-use continuation: the assistant's thinking and call, then the call's result."""
    return [
        Message(role="user", parts=(TextPart(text="What time is it?"),)),
        Message(
            role="assistant",
            parts=(reasoning, ToolCallPart(id="call_1", name="current_time", arguments="{}")),
        ),
        Message(
            role="tool", parts=(ToolResultPart(tool_call_id="call_1", name="current_time", content="noon"),)
        ),
    ]


def check_reasoning_requested_only_when_asked(provider: Provider, reasoning_model: ModelSpec) -> None:
    """A model that declares reasoning asks the vendor for it when asked, and only then."""
    off = provider.build_request(ask(), reasoning_model, RequestOptions())
    on = provider.build_request(ask(), reasoning_model, RequestOptions(reasoning=THINK))
    assert on != off, f"{provider.id} asked for nothing more when asked to reason"


def check_foreign_reasoning_never_sent(provider: Provider, reasoning_model: ModelSpec) -> None:
    """Another vendor's thoughts and signatures are only valid there: they never leave in a request."""
    foreign = ReasoningPart(provider="elsewhere", text="FOREIGN-THOUGHT", signature="FOREIGN-SIG")
    options = RequestOptions(reasoning=THINK, tools=(TOOL,))
    dumped = _dump(provider.build_request(_tool_loop(foreign), reasoning_model, options))
    assert "FOREIGN-THOUGHT" not in dumped
    assert "FOREIGN-SIG" not in dumped


def check_own_reasoning_goes_back(
    provider: Provider, reasoning_model: ModelSpec, signed: ReasoningPart
) -> None:
    """A provider that declares opaque reasoning sends its own signed block back on a tool continuation."""
    options = RequestOptions(reasoning=THINK, tools=(TOOL,))
    assert signed.signature is not None
    assert signed.signature in _dump(provider.build_request(_tool_loop(signed), reasoning_model, options))


def check_stream(events: Sequence[ProviderEvent]) -> None:
    """A well-formed stream: text blocks open before their deltas and close, tool calls close, and one
    ``Finish`` comes last."""
    open_text: set[str] = set()
    open_calls: set[str] = set()
    assert events, "the stream yielded nothing"
    assert isinstance(events[-1], Finish), f"the stream must end with Finish, not {events[-1]!r}"
    assert sum(isinstance(e, Finish) for e in events) == 1, "exactly one Finish"
    for event in events:
        if isinstance(event, TextStart):
            open_text.add(event.id)
        elif isinstance(event, TextDelta):
            assert event.id in open_text, f"text delta for block {event.id!r} that is not open"
        elif isinstance(event, TextEnd):
            assert event.id in open_text, f"text end for block {event.id!r} that is not open"
            open_text.discard(event.id)
        elif isinstance(event, ToolCallStart):
            open_calls.add(event.id)
        elif isinstance(event, ToolCallEnd):
            open_calls.discard(event.id)
    assert not open_text, f"text blocks never closed: {sorted(open_text)}"
    assert not open_calls, f"tool calls never closed: {sorted(open_calls)}"


async def collect(provider: Provider, messages: Sequence[Message], model: ModelSpec) -> list[ProviderEvent]:
    """Every event of one stream (a :class:`ProviderError` propagates)."""
    return [event async for event in provider.stream(messages, model, RequestOptions())]


async def events_and_error(
    provider: Provider, messages: Sequence[Message], model: ModelSpec
) -> tuple[list[ProviderEvent], ProviderError | None]:
    """Every event one stream yielded, and the :class:`ProviderError` that ended it, if one did."""
    events: list[ProviderEvent] = []
    try:
        async for event in provider.stream(messages, model, RequestOptions()):
            events.append(event)
    except ProviderError as exc:
        return events, exc
    return events, None


def check_provider(provider: Provider, vision_model: ModelSpec, text_model: ModelSpec | None = None) -> None:
    """Every build-time check at once (for a plugin that does not use pytest classes)."""
    text = text_model or msgspec.structs.replace(vision_model, type="text")
    check_identity(provider)
    check_capabilities(provider, vision_model)
    check_vendor_facts(provider, vision_model)
    check_declared_images(provider, vision_model)
    check_undeclared_image_refused(provider, vision_model)
    check_text_model_refuses_images(provider, text)
    check_url_images_follow_url_fetch(provider, vision_model)
    check_declared_tools(provider, vision_model)
    check_vision_model_reads_no_documents(provider, vision_model)
    check_documents_and_audio_follow_capabilities(
        provider, msgspec.structs.replace(vision_model, type="multimodal")
    )


class ProviderConformance:
    """The suite as pytest tests: subclass it as ``Test…`` and set ``factory`` and ``vision_model``.

    ``text_model`` defaults to the vision model with ``type="text"``; ``environ`` is what the factory's
    :class:`ProviderContext` holds (keys, base URLs). ``stream_model``, when set, is streamed once with
    a text question (point its options at a loopback fake, or leave it ``None`` when streaming needs
    the vendor). ``reasoning_model`` (default: the vision model) is checked for reasoning when the
    provider declares it for that model. Override the ``provider`` / ``vision_model`` /
    ``text_model`` / ``signed_reasoning`` fixtures for anything more (Iris parametrises them over its
    built-ins).
    """

    factory: ClassVar[staticmethod[[ProviderContext], Provider]]
    vision_model: ClassVar[ModelSpec]
    text_model: ClassVar[ModelSpec | None] = None
    stream_model: ClassVar[ModelSpec | None] = None
    reasoning_model: ClassVar[ModelSpec | None] = None
    environ: ClassVar[Mapping[str, str]] = {}

    @pytest.fixture(name="provider")
    def _provider(self) -> Iterator[Provider]:
        http = httpx.AsyncClient()
        try:
            yield type(self).factory(ProviderContext(environ=dict(self.environ), http=http))
        finally:
            asyncio.run(http.aclose())

    @pytest.fixture(name="vision_model")
    def _vision_model(self) -> ModelSpec:
        return type(self).vision_model

    @pytest.fixture(name="stream_model")
    def _stream_model(self) -> ModelSpec:
        model = type(self).stream_model
        if model is None:
            pytest.skip("no stream_model: streaming this provider needs its vendor or a loopback fake")
        return model

    @pytest.fixture(name="text_model")
    def _text_model(self, vision_model: ModelSpec) -> ModelSpec:
        return type(self).text_model or msgspec.structs.replace(vision_model, type="text")

    @pytest.fixture(name="reasoning_model")
    def _reasoning_model(self, provider: Provider, vision_model: ModelSpec) -> ModelSpec:
        model = type(self).reasoning_model or vision_model
        if not provider.capabilities(model).reasoning.supported:
            pytest.skip(f"{provider.id} declares no reasoning for {model.model_id}")
        return model

    @pytest.fixture(name="signed_reasoning")
    def _signed_reasoning(self, provider: Provider) -> ReasoningPart:
        """A thought of this provider's own with a signature it accepts back (override for a real one)."""
        return ReasoningPart(
            provider=provider.id,
            text="I should call the clock.",
            signature="OWN-SIGNATURE==",
            tool_call_id="call_1",
        )

    def test_identity(self, provider: Provider) -> None:
        check_identity(provider)

    def test_capabilities(self, provider: Provider, vision_model: ModelSpec) -> None:
        check_capabilities(provider, vision_model)

    def test_vendor_facts(self, provider: Provider, vision_model: ModelSpec) -> None:
        check_vendor_facts(provider, vision_model)

    def test_declared_image_types_become_native_blocks(
        self, provider: Provider, vision_model: ModelSpec
    ) -> None:
        check_declared_images(provider, vision_model)

    def test_undeclared_image_type_is_refused(self, provider: Provider, vision_model: ModelSpec) -> None:
        check_undeclared_image_refused(provider, vision_model)

    def test_images_to_a_text_model_are_refused(self, provider: Provider, text_model: ModelSpec) -> None:
        check_text_model_refuses_images(provider, text_model)

    def test_url_images_follow_url_fetch(self, provider: Provider, vision_model: ModelSpec) -> None:
        check_url_images_follow_url_fetch(provider, vision_model)

    def test_declared_tools_reach_the_request(self, provider: Provider, vision_model: ModelSpec) -> None:
        check_declared_tools(provider, vision_model)

    def test_a_vision_model_reads_no_documents(self, provider: Provider, vision_model: ModelSpec) -> None:
        check_vision_model_reads_no_documents(provider, vision_model)

    def test_documents_and_audio_follow_capabilities(
        self, provider: Provider, vision_model: ModelSpec
    ) -> None:
        check_documents_and_audio_follow_capabilities(
            provider, msgspec.structs.replace(vision_model, type="multimodal")
        )

    def test_declared_reasoning_is_requested_only_when_asked(
        self, provider: Provider, reasoning_model: ModelSpec
    ) -> None:
        check_reasoning_requested_only_when_asked(provider, reasoning_model)

    def test_another_vendors_reasoning_is_never_sent(
        self, provider: Provider, reasoning_model: ModelSpec
    ) -> None:
        check_foreign_reasoning_never_sent(provider, reasoning_model)

    def test_its_own_signed_reasoning_goes_back_on_a_tool_continuation(
        self, provider: Provider, reasoning_model: ModelSpec, signed_reasoning: ReasoningPart
    ) -> None:
        if not provider.capabilities(reasoning_model).reasoning.encrypted:
            pytest.skip(f"{provider.id} declares no opaque reasoning for {reasoning_model.model_id}")
        check_own_reasoning_goes_back(provider, reasoning_model, signed_reasoning)

    def test_a_stream_is_well_formed(self, provider: Provider, stream_model: ModelSpec) -> None:
        question = [Message(role="user", parts=(TextPart(text="hello"),))]
        check_stream(asyncio.run(collect(provider, question, stream_model)))
