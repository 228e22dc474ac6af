"""Usage you can bill on: token counts per turn and per run, image estimates, and a cost.

AG-UI's ``TokenUsage`` is closed, so it carries only what it defines (input, output, total, reasoning,
cached input); the fuller :class:`BillableUsage` — image tokens (as the vendor reported them, and as
estimated from the images sent), the estimates for the PDF pages and audio seconds sent natively, and a
``cost`` from the model's ``options.pricing`` (per million
tokens) — rides in ``WorkerAgentOutput.usage`` and in ``RUN_FINISHED.metadata["iris/usage"]``, and is
what the run row stores and the session usage endpoint sums.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from iris.app.agui.events import TokenUsage
from iris.app.media.image_tokens import fitted
from iris.app.runs.content.media_prices import MediaSent, media_cost
from iris.providers import (
    Capabilities,
    ImageFormula,
    ImagePart,
    Message,
    ModelSpec,
    Provider,
    Usage,
    image_formulas,
)
from iris.providers.vendor_facts import vendor_facts
from iris.providers.wire import WireStruct

USAGE_KEY = "iris/usage"
"""``RUN_FINISHED.metadata`` key of the run's :class:`BillableUsage`."""
_PRICE_KEYS = ("input", "output", "reasoning", "cachedInput", "image")


class Cost(WireStruct, kw_only=True):
    """What the counted tokens cost at the model's prices (``options.pricing``, per million tokens), and
    the media sent at its prices per image, PDF page and audio second (``media``, part of ``total``)."""

    currency: str
    input: float
    output: float
    total: float
    media: float = 0.0


class BillableUsage(TokenUsage, omit_defaults=True, kw_only=True):
    """AG-UI's counts for one provider+model and what it has no room for; unknown counts are absent,
    never 0. ``inputTokens`` and ``outputTokens`` are totals: cached and image tokens are part of the
    input, reasoning of the output. ``estimatedImageTokens`` sums the published-formula estimate of
    every image sent (each request); ``estimatedDocumentTokens`` and ``estimatedAudioTokens`` the
    per-page and per-second estimates of every PDF and audio clip sent natively (each request; absent
    when none was, or the vendor has no published figure). All three are parts of the input."""

    image_tokens: int | None = None
    estimated_image_tokens: int | None = None
    estimated_document_tokens: int | None = None
    estimated_audio_tokens: int | None = None
    images_sent: int | None = None
    pdf_pages_sent: int | None = None
    audio_seconds_sent: float | None = None
    """The billable media sent (every request's), what the media prices apply to; absent when none."""
    cost: Cost | None = None


def _add(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


@dataclass(slots=True)
class Counts:
    """Running counts (a turn's, or a run's)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    image_tokens: int | None = None
    estimated_image_tokens: int | None = None
    estimated_document_tokens: int | None = None
    estimated_audio_tokens: int | None = None
    media: MediaSent = field(default_factory=MediaSent)

    def report(self, usage: Usage) -> None:
        """A provider's ``Usage`` event (the last report of a turn wins)."""
        self.input_tokens = usage.input_tokens
        self.output_tokens = usage.output_tokens
        self.reasoning_tokens = usage.reasoning_tokens
        self.cached_input_tokens = usage.cached_input_tokens
        self.image_tokens = usage.image_tokens

    def add(self, other: Counts) -> None:
        self.input_tokens = _add(self.input_tokens, other.input_tokens)
        self.output_tokens = _add(self.output_tokens, other.output_tokens)
        self.reasoning_tokens = _add(self.reasoning_tokens, other.reasoning_tokens)
        self.cached_input_tokens = _add(self.cached_input_tokens, other.cached_input_tokens)
        self.image_tokens = _add(self.image_tokens, other.image_tokens)
        self.estimated_image_tokens = _add(self.estimated_image_tokens, other.estimated_image_tokens)
        self.estimated_document_tokens = _add(self.estimated_document_tokens, other.estimated_document_tokens)
        self.estimated_audio_tokens = _add(self.estimated_audio_tokens, other.estimated_audio_tokens)
        self.media.images += other.media.images
        self.media.pdf_pages += other.media.pdf_pages
        self.media.audio_seconds += other.media.audio_seconds

    @property
    def empty(self) -> bool:
        return all(
            value is None
            for value in (
                self.input_tokens,
                self.output_tokens,
                self.reasoning_tokens,
                self.cached_input_tokens,
                self.image_tokens,
                self.estimated_image_tokens,
                self.estimated_document_tokens,
                self.estimated_audio_tokens,
            )
        )


def token_usage(counts: Counts, *, provider: str, model: str) -> TokenUsage | None:
    """The AG-UI ``TokenUsage`` entry (``None`` when nothing was counted)."""
    if counts.input_tokens is None and counts.output_tokens is None:
        return None
    return TokenUsage(
        provider=provider,
        model=model,
        input_tokens=counts.input_tokens,
        output_tokens=counts.output_tokens,
        total_tokens=_total(counts),
        reasoning_tokens=counts.reasoning_tokens,
        cached_input_tokens=counts.cached_input_tokens,
    )


def billable(counts: Counts, *, provider: str, model: ModelSpec) -> BillableUsage | None:
    """The full usage with a cost when the model has prices (``None`` when nothing was counted)."""
    if counts.empty:
        return None
    return _billable_usage(counts, provider, model.model_id, cost(counts, model.options.get("pricing")))


def _billable_usage(
    counts: Counts, provider: str | None, model: str | None, spent: Cost | None
) -> BillableUsage:
    return BillableUsage(
        provider=provider,
        model=model,
        input_tokens=counts.input_tokens,
        output_tokens=counts.output_tokens,
        total_tokens=_total(counts),
        reasoning_tokens=counts.reasoning_tokens,
        cached_input_tokens=counts.cached_input_tokens,
        image_tokens=counts.image_tokens,
        estimated_image_tokens=counts.estimated_image_tokens,
        estimated_document_tokens=counts.estimated_document_tokens,
        estimated_audio_tokens=counts.estimated_audio_tokens,
        images_sent=counts.media.images or None,
        pdf_pages_sent=counts.media.pdf_pages or None,
        audio_seconds_sent=round(counts.media.audio_seconds, 3) or None,
        cost=spent,
    )


def _total(counts: Counts) -> int | None:
    if counts.input_tokens is None or counts.output_tokens is None:
        return None
    return counts.input_tokens + counts.output_tokens


def cost(counts: Counts, pricing: Any) -> Cost | None:
    """``pricing`` (per million tokens: ``input``, ``output``, optional ``reasoning``, ``cachedInput``,
    ``image``, ``currency``; per unit: ``perImage``, ``perPdfPage``, ``perAudioSecond``) applied to the
    counts; ``None`` without prices or without counts.

    Cached, image and reasoning tokens are priced as parts of the totals (never counted twice); image
    tokens the vendor did not report are the estimate, bounded by the input."""
    if not isinstance(pricing, Mapping) or counts.input_tokens is None or counts.output_tokens is None:
        return None
    price = {key: pricing.get(key) for key in _PRICE_KEYS}
    if not all(isinstance(v, int | float) for v in (price["input"], price["output"])):
        return None
    p_in, p_out = float(price["input"]), float(price["output"])  # type: ignore[arg-type]
    p_cached = float(price["cachedInput"]) if isinstance(price["cachedInput"], int | float) else p_in
    p_image = float(price["image"]) if isinstance(price["image"], int | float) else p_in
    p_reason = float(price["reasoning"]) if isinstance(price["reasoning"], int | float) else p_out
    cached = min(counts.cached_input_tokens or 0, counts.input_tokens)
    images = counts.image_tokens if counts.image_tokens is not None else counts.estimated_image_tokens or 0
    images = min(images, counts.input_tokens - cached)
    plain_in = counts.input_tokens - cached - images
    reasoning = min(counts.reasoning_tokens or 0, counts.output_tokens)
    input_cost = (plain_in * p_in + cached * p_cached + images * p_image) / 1_000_000
    output_cost = ((counts.output_tokens - reasoning) * p_out + reasoning * p_reason) / 1_000_000
    media = media_cost(counts.media, pricing)
    return Cost(
        currency=str(pricing.get("currency", "USD")),
        input=round(input_cost, 8),
        output=round(output_cost, 8),
        total=round(input_cost + output_cost + media, 8),
        media=media,
    )


def image_formula(provider: Provider, options: Mapping[str, Any]) -> ImageFormula | None:
    """The estimate formula for a model: ``options.imageCostFormula``, else its vendor's declared one."""
    chosen = options.get("imageCostFormula")
    if chosen in image_formulas.PUBLISHED:
        return image_formulas.PUBLISHED[chosen]
    if chosen == "none":
        return None
    return vendor_facts(provider).image_formula


def _detail(options: Mapping[str, Any]) -> str:
    return str(options.get("detail") or options.get("mediaResolution") or "high")


def request_image_tokens(messages: Sequence[Message], provider: Provider, model: ModelSpec) -> int | None:
    """The estimate for every image in one request, at the size delivered (``None``: no formula): the
    user's and the tools' alike, whether a tool's travel in its result or in a user turn after it."""
    formula = image_formula(provider, model.options)
    if formula is None:
        return None
    images: Iterable[ImagePart] = (image for message in messages for image in message.images_sent)
    return sum(formula.tokens(i.width, i.height, model.model_id, _detail(model.options)) for i in images)


def image_part_estimate(
    part: Mapping[str, Any], provider: Provider, model: ModelSpec, caps: Capabilities
) -> dict[str, Any] | None:
    """What a stored image part will cost this model, for its metadata (``None``: no formula or size)."""
    formula = image_formula(provider, model.options)
    width, height = part.get("width"), part.get("height")
    if formula is None or not isinstance(width, int) or not isinstance(height, int):
        return None
    edges = [e for e in (caps.recommended_long_edge_px, caps.max_image_edge_px) if e]
    w, h = fitted(width, height, min(edges) if edges else None)
    tokens = formula.tokens(w, h, model.model_id, _detail(model.options))
    return {
        "provider": provider.id,
        "model": model.model_id,
        "formula": formula.name,
        "width": w,
        "height": h,
        "tokens": tokens,
    }


def attachment_rate(kind: str, provider: Provider) -> float | None:
    """Input tokens per PDF page (``kind`` ``document``) or per second of audio (``audio``) sent natively
    to ``provider``, as its vendor declares them (``None``: no published figure)."""
    facts = vendor_facts(provider)
    return facts.pdf_page_tokens if kind == "document" else facts.audio_second_tokens


def attachment_tokens(kind: str, provider: Provider, count: float) -> int | None:
    """The estimate for ``count`` pages of a PDF or seconds of audio (``kind``: ``document`` or
    ``audio``) sent natively to ``provider`` (``None``: no published figure)."""
    rate = attachment_rate(kind, provider)
    return round(rate * count) if rate is not None else None


def attachment_estimate(
    part: Mapping[str, Any], provider: Provider, model: ModelSpec
) -> dict[str, Any] | None:
    """What a stored document or audio part sent natively will cost this model (``None``: no figure)."""
    kind = part.get("type")
    if kind == "document":
        unit, count = "page", float(part.get("pages") or 0)
    elif kind == "audio":
        unit, count = "second", float(part.get("durationSeconds") or 0)
    else:
        return None
    rate = attachment_rate(kind, provider)
    if rate is None:
        return None
    return {
        "provider": model.provider,
        "model": model.model_id,
        "per": unit,
        "rate": rate,
        "tokens": round(rate * count),
    }


def request_attachment_tokens(
    messages: Sequence[Message], provider: Provider
) -> tuple[int | None, int | None]:
    """The estimates for every PDF and every audio clip one request carries natively, by kind, each the
    sum of what its parts' ``tokenEstimate`` says (``None`` for a kind the request carries none of, or
    whose vendor has no figure)."""
    documents = [p.pages for m in messages for p in m.documents]
    clips = [p.seconds for m in messages for p in m.audio]
    return _summed("document", provider, documents), _summed("audio", provider, clips)


def _summed(kind: str, provider: Provider, counts: Sequence[float]) -> int | None:
    estimates = [attachment_tokens(kind, provider, count) for count in counts]
    return sum(e for e in estimates if e is not None) if counts and None not in estimates else None


class SessionUsage(WireStruct, kw_only=True):
    """``GET /api/agents/{slug}/sessions/{id}/usage``: every run's billable usage summed per
    provider+model (costs in their own currency), and how many runs reported any."""

    session_id: str
    runs: int
    usage: list[BillableUsage]


def session_usage(session_id: str, recorded: Sequence[Mapping[str, Any]]) -> SessionUsage:
    """Sum the runs' stored usage (``billable`` where recorded, else AG-UI's entries)."""
    totals: dict[tuple[str | None, str | None], tuple[Counts, dict[str, float], str | None]] = {}
    runs = 0
    for usage in recorded:
        entries = [usage["billable"]] if usage.get("billable") else list(usage.get("entries") or ())
        runs += bool(entries)
        for entry in entries:
            key = (entry.get("provider"), entry.get("model"))
            counts, money, _ = totals.setdefault(key, (Counts(), {}, None))
            counts.add(
                Counts(
                    input_tokens=entry.get("inputTokens"),
                    output_tokens=entry.get("outputTokens"),
                    reasoning_tokens=entry.get("reasoningTokens"),
                    cached_input_tokens=entry.get("cachedInputTokens"),
                    image_tokens=entry.get("imageTokens"),
                    estimated_image_tokens=entry.get("estimatedImageTokens"),
                    estimated_document_tokens=entry.get("estimatedDocumentTokens"),
                    estimated_audio_tokens=entry.get("estimatedAudioTokens"),
                    media=MediaSent(
                        int(entry.get("imagesSent") or 0),
                        int(entry.get("pdfPagesSent") or 0),
                        float(entry.get("audioSecondsSent") or 0),
                    ),
                )
            )
            spent = entry.get("cost")
            if isinstance(spent, Mapping):
                for part in ("input", "output", "total", "media"):
                    money[part] = money.get(part, 0.0) + float(spent.get(part, 0.0))
                totals[key] = (counts, money, str(spent.get("currency", "USD")))
    out = [
        _billable_usage(
            counts,
            provider,
            model,
            Cost(
                currency=currency,
                input=round(money["input"], 8),
                output=round(money["output"], 8),
                total=round(money["total"], 8),
                media=round(money.get("media", 0.0), 8),
            )
            if currency is not None
            else None,
        )
        for (provider, model), (counts, money, currency) in totals.items()
    ]
    return SessionUsage(session_id=session_id, runs=runs, usage=out)
