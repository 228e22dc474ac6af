"""The offline local test model: deterministic, no network, the embedded default.

``local/vision`` really decodes every image it receives and describes it (format, size, dominant
colours), so a newcomer can see an image truly arrived; ``local/multimodal`` does that too and reads
every PDF (its page count and first line of text) and audio clip (format and duration) it is sent
(:mod:`iris.providers.local_media`); ``local/text`` answers text only. All call a
tool when the last user message says ``use tool <name> <json-args>``, which makes tool flows testable
offline, and stream token by token with an optional per-token delay (``options["delayMs"]`` on the
model, or ``RequestOptions.extra["local"]["delayMs"]``) so cancel and re-attach can be exercised;
``options["maxRequestBytes"]`` gives it a vendor-like whole-request limit. Told ``count to <n>`` (up to
200), it counts, a number every quarter second unless a delay is set, so that anyone can try Stop and
reload mid-answer on the defaults.

Asked to reason (``RequestOptions.reasoning``), it first thinks a short deterministic thought and
signs it (a SHA-256 over the text, standing in for a vendor's signature), and it checks that every
signature sent back to it is intact, as vendors do: a changed thought fails the request. A model
whose options say ``"reasoning": false`` cannot reason.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from iris.providers.checks import check_audio, check_document, check_image, check_tools, own_reasoning
from iris.providers.errors import ProviderError
from iris.providers.events import (
    Finish,
    FinishReason,
    ProviderEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningOpaque,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from iris.providers.local_media import describe_audio, describe_document, describe_image
from iris.providers.messages import (
    AudioPart,
    DocumentPart,
    ImagePart,
    Message,
    ReasoningPart,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from iris.providers.options import REASONING, OptionSpec
from iris.providers.spec import (
    SPEC_VERSION,
    AudioSupport,
    Capabilities,
    DocumentSupport,
    ModelSpec,
    ParameterSupport,
    ProviderContext,
    ReasoningSupport,
)
from iris.providers.vendor_facts import VendorFacts

LABEL = "[local test model]"
_TOOL_REQUEST = re.compile(r"use tool (?P<name>[A-Za-z_][\w.-]*)\s*(?P<args>\{.*\})?", re.DOTALL)
_TOKEN = re.compile(r"\S+\s*|\s+")
PARAMETERS = ParameterSupport(
    temperature=True,
    top_p=True,
    seed=True,
    stop=True,
    max_output_tokens=True,
    json_object=True,
    tool_choice=True,
    parallel_tool_calls=True,
)
"""Honoured as a deterministic model can: every temperature, ``top_p`` and ``seed`` gives the one (greedy)
answer; ``stop`` and ``max_output_tokens`` cut it; ``json_object`` wraps it as ``{"answer": …}``; a
required tool is called (with the arguments the message names, else ``{}``); it never calls two at once."""


DOCUMENTS = DocumentSupport(pdf=True, max_pages=100, max_bytes=32 * 1024 * 1024)
AUDIO = AudioSupport(mime_types=("audio/wav", "audio/mpeg"), max_seconds=600.0)
"""What ``local/multimodal`` reads: PDFs and WAV/MP3 within the caps a vendor would have (Anthropic's
100 pages and 32 MB; the 600 seconds Iris takes by default)."""

_COUNT_REQUEST = re.compile(r"\bcount to (\d{1,4})\b", re.IGNORECASE)
MAX_COUNT = 200
COUNT_PACE_SECONDS = 0.25
"""The pause before each token of a ``count to <n>`` answer with no delay set: slow enough to press Stop."""

PDF_PAGE_TOKENS = 258
AUDIO_SECOND_TOKENS = 32
"""What ``local`` declares a PDF page and a second of audio cost: Gemini's published figures."""


class LocalProvider:
    """Offline and deterministic; see the module docstring."""

    id = "local"
    spec_version = SPEC_VERSION
    vendor_facts = VendorFacts(pdf_page_tokens=PDF_PAGE_TOKENS, audio_second_tokens=AUDIO_SECOND_TOKENS)
    """Counts pages and audio as Gemini does; no image formula (a model names one with
    ``imageCostFormula``)."""
    model_options: Mapping[str, OptionSpec] = {
        "delayMs": OptionSpec(type="integer", description="pause before each streamed token (0 to 10000 ms)"),
        "maxRequestBytes": OptionSpec(
            type="integer", description="a vendor-like limit on one whole request body, in bytes (tests)"
        ),
        "reasoning": REASONING,
    }

    def capabilities(self, model: ModelSpec) -> Capabilities:
        return Capabilities(
            vision=model.type != "text",
            image_mime_types=("image/png", "image/jpeg", "image/webp") if model.type != "text" else (),
            max_images=16 if model.type != "text" else 0,
            max_image_bytes=20 * 1024 * 1024 if model.type != "text" else 0,
            image_bytes_measured_on="raw",
            max_image_edge_px=8192,
            recommended_long_edge_px=2048,
            url_fetch="none",
            tools=model.supports_tools,
            max_request_bytes=_max_request_bytes(model),
            parameters=PARAMETERS,
            reasoning=ReasoningSupport(supported=True, streamed=True, encrypted=True, effort=True)
            if model.options.get("reasoning", True) is not False
            else ReasoningSupport(),
            tool_result_images="native",  # it looks at a tool's images where they came back
            documents=DOCUMENTS if model.type == "multimodal" else DocumentSupport(),
            audio=AUDIO if model.type == "multimodal" else AudioSupport(),
        )

    def build_request(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> dict[str, Any]:
        """What the local model will look at: roles, texts, image summaries, tool names (no bytes)."""
        caps = self.capabilities(model)
        check_tools(options.tools, caps, provider=self.id, model_id=model.model_id)
        out: list[dict[str, Any]] = []
        for message in messages:
            content: list[dict[str, Any]] = []
            for part in message.parts:
                if isinstance(part, TextPart):
                    content.append({"type": "text", "text": part.text})
                elif isinstance(part, ImagePart):
                    check_image(part, caps, provider=self.id, model_id=model.model_id)
                    content.append(_image_digest(part))
                elif isinstance(part, DocumentPart):
                    check_document(part, caps, provider=self.id, model_id=model.model_id)
                    content.append(_digest(part, pages=part.pages))
                elif isinstance(part, AudioPart):
                    check_audio(part, caps, provider=self.id, model_id=model.model_id)
                    content.append(_digest(part, seconds=part.seconds))
                elif isinstance(part, ToolCallPart):
                    content.append(
                        {"type": "tool_call", "id": part.id, "name": part.name, "arguments": part.arguments}
                    )
                elif isinstance(part, ReasoningPart):
                    mine = own_reasoning(part, self.id)
                    if mine is not None and message.role == "assistant":
                        _check_signature(mine)
                        content.append({"type": "reasoning", "text": mine.text, "signature": mine.signature})
                else:
                    for image in part.images:
                        check_image(image, caps, provider=self.id, model_id=model.model_id)
                    content.append(
                        {
                            "type": "tool_result",
                            "toolCallId": part.tool_call_id,
                            "content": part.content,
                            "images": [_image_digest(image) for image in part.images],
                        }
                    )
            out.append({"role": message.role, "content": content})
        return {
            "model": model.model_id,
            "system": options.system,
            "messages": out,
            "tools": [tool.name for tool in options.tools],
            "delayMs": _delay_ms(model, options),
            "reasoningEffort": options.reasoning.effort
            if options.reasoning is not None and caps.reasoning.supported
            else None,
            "stop": list(options.stop),
            "maxTokens": options.max_output_tokens,
            "json": options.response_format is not None,
            "toolChoice": None
            if options.tool_choice is None or not options.tools
            else options.tool_choice.name or options.tools[0].name,
        }

    async def stream(
        self, messages: Sequence[Message], model: ModelSpec, options: RequestOptions
    ) -> AsyncIterator[ProviderEvent]:
        request = self.build_request(messages, model, options)
        last = messages[-1] if messages else Message(role="user", parts=())
        delay = request["delayMs"] / 1000 or (COUNT_PACE_SECONDS if _count(last) else 0.0)
        prompt_words = sum(len(m.text.split()) for m in messages)
        thought_tokens = 0
        if request["reasoningEffort"] is not None:
            thought = _thought(last, request["reasoningEffort"])
            reasoning_id = f"think-{len(messages)}"
            yield ReasoningStart(id=reasoning_id)
            for token in _TOKEN.findall(thought):
                await _pace(delay)
                thought_tokens += 1
                yield ReasoningDelta(id=reasoning_id, delta=token)
            yield ReasoningOpaque(id=reasoning_id, kind="signature", value=sign(thought))
            yield ReasoningEnd(id=reasoning_id)

        call = _requested_tool(last, request["tools"], len(messages), request["toolChoice"])
        if call is not None:
            call_id, name, arguments = call
            yield ToolCallStart(id=call_id, name=name)
            for chunk in (arguments[i : i + 16] for i in range(0, len(arguments), 16)):
                await _pace(delay)
                yield ToolCallArgs(id=call_id, delta=chunk)
            yield ToolCallEnd(id=call_id)
            yield _usage(prompt_words, 1, thought_tokens)
            yield Finish(reason="tool_calls")
            return

        # Decoding the media is the model's real work: on a worker thread (Pillow and PDFium let go of
        # the GIL), as a vendor's is on its own servers, so the event loop keeps serving meanwhile.
        media = last.images or last.documents or last.audio
        answer = (
            await asyncio.to_thread(_answer, last, request["tools"])
            if media or _result_images([p for p in last.parts if isinstance(p, ToolResultPart)])
            else _answer(last, request["tools"])
        )
        text_id = f"local-{len(messages)}"
        tokens, finish, stopped_by = _shaped(answer, request)
        yield TextStart(id=text_id)
        for token in tokens:
            await _pace(delay)
            yield TextDelta(id=text_id, delta=token)
        yield TextEnd(id=text_id)
        yield _usage(prompt_words, len(tokens), thought_tokens)
        yield Finish(reason=finish, stop_sequence=stopped_by)


def _digest(part: DocumentPart | AudioPart, **measured: float) -> dict[str, Any]:
    """A document or audio part as the request shows it: its facts and a hash, not its bytes."""
    kind = "document" if isinstance(part, DocumentPart) else "audio"
    sha = hashlib.sha256(part.data).hexdigest()
    return {"type": kind, "mimeType": part.mime_type, "name": part.name, **measured, "sha256": sha}


def _image_digest(part: ImagePart) -> dict[str, Any]:
    assert part.data is not None  # url_fetch is "none": check_image refused any URL
    return {
        "type": "image",
        "mimeType": part.mime_type,
        "width": part.width,
        "height": part.height,
        "sha256": hashlib.sha256(part.data).hexdigest(),
    }


async def _pace(delay: float) -> None:
    """The pause before a token. Without one the answer comes as one burst, like a fast vendor's: a
    ``sleep(0)`` per token would only make every token a turn of the event loop (and a write of its own)."""
    if delay > 0:
        await asyncio.sleep(delay)


def _max_request_bytes(model: ModelSpec) -> int:
    """No limit in-process; ``options["maxRequestBytes"]`` makes the model behave like a vendor with one."""
    value = model.options.get("maxRequestBytes", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def sign(thought: str) -> str:
    """The local model's signature of a thought (opaque to everyone else)."""
    return base64.b64encode(hashlib.sha256(f"local:{thought}".encode()).digest()).decode()


def _check_signature(part: ReasoningPart) -> None:
    """A vendor refuses reasoning sent back changed; so does the local model."""
    if part.signature is not None and part.signature != sign(part.text):
        raise ProviderError("bad_request", "a thought was sent back changed", provider="local", status=400)


def _thought(last: Message, effort: str) -> str:
    subject = " ".join(last.text.split()[:12]) if last.role == "user" else "the tool's answer"
    images = f" and {len(last.images)} image(s)" if last.images else ""
    return f"Thinking ({effort} effort) about: {subject or 'an empty message'}{images}. Answer plainly."


def _usage(prompt_words: int, answer_tokens: int, thought_tokens: int) -> Usage:
    """Reasoning tokens are part of the output, as vendors count them."""
    return Usage(
        input_tokens=prompt_words,
        output_tokens=answer_tokens + thought_tokens,
        reasoning_tokens=thought_tokens if thought_tokens else None,
    )


def _delay_ms(model: ModelSpec, options: RequestOptions) -> int:
    local = options.extra.get("local")
    value = local.get("delayMs") if isinstance(local, dict) else None
    if value is None:
        value = model.options.get("delayMs", 0)
    try:
        return max(0, min(int(value), 10_000))
    except (TypeError, ValueError):
        return 0


def _shaped(answer: str, request: Mapping[str, Any]) -> tuple[list[str], FinishReason, str | None]:
    """The answer's tokens as the request shapes them (JSON, stop sequences, a token limit), why it
    ends, and the stop sequence that ended it (the one that comes first in the answer)."""
    if request["json"]:
        answer = json.dumps({"answer": answer})
    found = [(answer.index(stop), stop) for stop in request["stop"] if stop and stop in answer]
    stopped_by = min(found)[1] if found else None
    if found:
        answer = answer[: min(found)[0]]
    tokens = _TOKEN.findall(answer)
    limit = request["maxTokens"]
    if limit is not None and len(tokens) > limit:
        return tokens[:limit], "length", None
    return tokens, "stop", stopped_by


def _requested_tool(
    last: Message, tools: list[str], position: int, required: str | None = None
) -> tuple[str, str, str] | None:
    """``(call id, name, JSON args)`` when the last user turn asks for an available tool, or a tool is
    ``required`` (its name) and the user asked for no other."""
    if last.role != "user":
        return None
    match = _TOOL_REQUEST.search(last.text)
    name, raw = (match["name"], match["args"]) if match is not None else (required, None)
    if required is not None and name != required:
        name, raw = required, None
    if name is None or name not in tools:
        return None
    try:
        arguments = json.dumps(json.loads(raw or "{}"), separators=(",", ":"), sort_keys=True)
    except json.JSONDecodeError:
        return None
    digest = hashlib.sha256(f"{position}:{name}:{arguments}".encode()).hexdigest()[:16]
    return f"call_{digest}", name, arguments


def _answer(last: Message, tools: list[str]) -> str:
    if last.role == "tool":
        results = [p for p in last.parts if isinstance(p, ToolResultPart)]
        said = " ".join(
            f"Tool {r.name} {'failed' if r.is_error else 'returned'}: {r.content}" for r in results
        )
        seen = [describe_image(image, index) for index, image in enumerate(_result_images(results), start=1)]
        return "\n".join([f"{LABEL} {said}", *seen])
    lines = [LABEL]
    for index, image in enumerate(last.images, start=1):
        lines.append(describe_image(image, index))
    for index, document in enumerate(last.documents, start=1):
        lines.append(describe_document(document, index))
    for index, clip in enumerate(last.audio, start=1):
        lines.append(describe_audio(clip, index))
    match = _TOOL_REQUEST.search(last.text)
    if match is not None and match["name"] not in tools:
        lines.append(f"I have no tool called {match['name']}.")
    text = last.text.strip()
    if text:
        lines.append(f"You said: {text}")
    elif not (last.images or last.documents or last.audio):
        lines.append("You said nothing.")
    if count := _count(last):
        lines.append(" ".join(str(number) for number in range(1, count + 1)))
    return "\n".join(lines)


def _count(last: Message) -> int:
    """How far a user's ``count to <n>`` asks it to count (at most :data:`MAX_COUNT`); 0 when it does not."""
    match = _COUNT_REQUEST.search(last.text) if last.role == "user" else None
    return min(int(match[1]), MAX_COUNT) if match else 0


def _result_images(results: Sequence[ToolResultPart]) -> list[ImagePart]:
    return [image for result in results for image in result.images]


def create(context: ProviderContext) -> LocalProvider:
    """Entry point: the local model needs nothing from the context."""
    return LocalProvider()
