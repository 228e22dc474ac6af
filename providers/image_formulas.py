"""The image token formulas vendors publish (an estimate: vendors bill what they count, and only some
report it), for a provider to declare in its :class:`~iris.providers.vendor_facts.VendorFacts` — its own, or
the vendor's whose models it proxies — and for a model's ``imageCostFormula`` option to name.

- OpenAI (GPT-4o-class, ``detail``): ``low`` is 85 tokens; ``high`` (and ``auto``, estimated as high)
  fits the image in 2048x2048, scales its shortest side down to 768, then costs 85 + 170 per 512-px
  tile — the guide's 1024x1024 example is 765 tokens.
- Anthropic: ``width x height / 750`` after fitting the long edge in 1568 px and the image in about
  1,600 tokens — the docs' 1092x1092 example is ≈ 1,590 tokens.
- Gemini: 258 tokens when both sides are at most 384 px, else 258 per 768x768 tile; Gemini 3 counts
  per image by ``media_resolution`` (low 280, medium 560, high 1120).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_MAX_TOKENS = 1600
GEMINI3_TOKENS = {"low": 280, "medium": 560, "high": 1120}


@dataclass(frozen=True, slots=True)
class ImageFormula:
    """A published formula by name: ``tokens(width, height, model_id, detail)`` is what one image of
    that size (as delivered) costs the model, ``detail`` being the model's ``detail`` or
    ``mediaResolution`` option (``high`` when it has neither)."""

    name: str
    tokens: Callable[[int, int, str, str], int]


def openai_tokens(width: int, height: int, detail: str = "high") -> int:
    """OpenAI's tile formula for GPT-4o-class models."""
    if detail == "low":
        return 85
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return 85 + 170 * tiles


def anthropic_tokens(width: int, height: int) -> int:
    """Anthropic's ``w x h / 750``, after its own downscale (long edge 1568 px, about 1,600 tokens)."""
    w, h = float(width), float(height)
    if max(w, h) > ANTHROPIC_MAX_EDGE:
        scale = ANTHROPIC_MAX_EDGE / max(w, h)
        w, h = w * scale, h * scale
    return min(round(w * h / 750), ANTHROPIC_MAX_TOKENS)


def gemini_tokens(width: int, height: int, model_id: str = "", media_resolution: str = "high") -> int:
    """Gemini's per-tile count (2.x), or its per-image count by media resolution (3.x)."""
    if model_id.startswith("gemini-3"):
        return GEMINI3_TOKENS.get(media_resolution, GEMINI3_TOKENS["high"])
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


OPENAI = ImageFormula("openai", lambda width, height, _model_id, detail: openai_tokens(width, height, detail))
ANTHROPIC = ImageFormula(
    "anthropic", lambda width, height, _model_id, _detail: anthropic_tokens(width, height)
)
GEMINI = ImageFormula(
    "gemini",
    lambda width, height, model_id, detail: gemini_tokens(
        width, height, model_id, detail if detail in GEMINI3_TOKENS else "high"
    ),
)
PUBLISHED: dict[str, ImageFormula] = {f.name: f for f in (OPENAI, ANTHROPIC, GEMINI)}
"""The formulas a model's ``imageCostFormula`` option may name (or ``none``)."""


def image_tokens(formula: str, width: int, height: int, *, model_id: str = "", detail: str = "high") -> int:
    """The estimate for one image of this size under the published formula named ``formula``."""
    return PUBLISHED[formula].tokens(width, height, model_id, detail)
