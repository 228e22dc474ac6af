"""Prices per image, per PDF page and per second of audio: a model's ``options.pricing`` keys
``perImage``, ``perPdfPage`` and ``perAudioSecond`` (in the pricing's currency), beside its per-token
prices. They apply to what a request actually sends its vendor — the images delivered, the PDFs and
audio sent natively — counted once per model request, so a run of several turns pays them per turn as
the vendor bills them. A document read as its text costs its tokens only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from iris.providers import Capabilities, Message

MEDIA_PRICE_KEYS = ("perImage", "perPdfPage", "perAudioSecond")


@dataclass(slots=True)
class MediaSent:
    """The billable media of one request (or summed over a run's requests)."""

    images: int = 0
    pdf_pages: int = 0
    audio_seconds: float = 0.0

    @property
    def empty(self) -> bool:
        return not (self.images or self.pdf_pages or self.audio_seconds)


def media_sent(messages: Sequence[Message]) -> MediaSent:
    """What one model request sends: its images (the users' and the tools'), its PDFs' pages and its
    audio clips' seconds."""
    return MediaSent(
        images=sum(len(m.images_sent) for m in messages),
        pdf_pages=sum(p.pages for m in messages for p in m.documents),
        audio_seconds=sum(p.seconds for m in messages for p in m.audio),
    )


def stored_media(parts: Iterable[Mapping[str, Any]], capabilities: Capabilities) -> MediaSent:
    """The same, foreseen from a thread's stored parts before the request is built (a budget's hold):
    images for a vision model, PDF pages for one that reads PDFs, audio for one that hears it."""
    sent = MediaSent()
    for part in parts:
        kind = part.get("type")
        if kind == "image" and capabilities.vision:
            sent.images += 1
        elif kind == "document" and capabilities.documents.pdf:
            sent.pdf_pages += int(part.get("pages") or 0)
        elif kind == "audio" and capabilities.audio.supported:
            sent.audio_seconds += float(part.get("durationSeconds") or 0)
    return sent


def media_cost(sent: MediaSent, pricing: Any) -> float:
    """``sent`` at the model's media prices (0 without any)."""
    if not isinstance(pricing, Mapping) or sent.empty:
        return 0.0
    prices = [pricing.get(key) for key in MEDIA_PRICE_KEYS]
    per_image, per_page, per_second = (float(p) if isinstance(p, int | float) else 0.0 for p in prices)
    return round(sent.images * per_image + sent.pdf_pages * per_page + sent.audio_seconds * per_second, 8)
