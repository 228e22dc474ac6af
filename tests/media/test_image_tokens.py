"""Image token estimates against the vendors' published worked examples, and costs from prices."""

from __future__ import annotations

import pytest

from iris.app.media.image_tokens import fitted
from iris.app.runs.content.usage import Counts, cost, session_usage
from iris.providers.image_formulas import anthropic_tokens, gemini_tokens, image_tokens, openai_tokens


@pytest.mark.parametrize(
    ("size", "detail", "tokens"),
    [
        ((1024, 1024), "high", 765),  # OpenAI vision guide: 768x768 after scaling, 4 tiles, 85 + 4*170
        ((2048, 4096), "high", 1105),  # guide: 1024x2048 then 768x1536, 6 tiles, 85 + 6*170
        ((4096, 8192), "low", 85),  # low detail is a flat 85, whatever the size
        ((512, 512), "high", 255),  # one tile, never enlarged
    ],
)
def test_openai_tile_formula(size: tuple[int, int], detail: str, tokens: int) -> None:
    assert openai_tokens(*size, detail) == tokens


@pytest.mark.parametrize(
    ("size", "tokens"),
    [
        ((200, 200), 53),  # Anthropic vision docs: 200x200 (0.04 MP) ~= 54 tokens
        ((1000, 1000), 1333),  # 1000x1000 (1 MP) ~= 1334 tokens
        ((1092, 1092), 1590),  # 1092x1092 (1.19 MP) ~= 1590 tokens
        ((4000, 4000), 1600),  # downscaled to fit, capped at about 1,600
    ],
)
def test_anthropic_area_formula(size: tuple[int, int], tokens: int) -> None:
    assert abs(anthropic_tokens(*size) - tokens) <= 1


def test_gemini_counts_small_images_once_and_tiles_larger_ones() -> None:
    assert gemini_tokens(384, 384) == 258
    assert gemini_tokens(1024, 1024) == 258 * 4  # 768x768 tiles
    assert gemini_tokens(1024, 1024, "gemini-3-pro-preview", "low") == 280  # per image by resolution
    assert image_tokens("gemini", 300, 200) == 258


def test_the_delivered_variant_is_fitted_never_enlarged() -> None:
    assert fitted(3000, 1500, 1568) == (1568, 784)
    assert fitted(800, 600, 1568) == (800, 600)
    assert fitted(800, 600, None) == (800, 600)


def test_cost_prices_each_kind_of_token_once() -> None:
    counts = Counts(
        input_tokens=10_000, output_tokens=2_000, reasoning_tokens=1_500, cached_input_tokens=4_000
    )
    counts.estimated_image_tokens = 1_590
    pricing = {"input": 3.0, "output": 15.0, "cachedInput": 0.3, "reasoning": 15.0, "image": 3.0}
    priced = cost(counts, pricing)
    assert priced is not None
    expected_in = (10_000 - 4_000 - 1_590) * 3.0 + 4_000 * 0.3 + 1_590 * 3.0
    expected_out = 500 * 15.0 + 1_500 * 15.0
    assert priced.input == pytest.approx(expected_in / 1e6)
    assert priced.output == pytest.approx(expected_out / 1e6)
    assert priced.total == pytest.approx((expected_in + expected_out) / 1e6)
    assert priced.currency == "USD"
    assert cost(counts, None) is None
    assert cost(counts, {"input": "cheap"}) is None
    assert cost(Counts(), pricing) is None  # nothing counted, nothing priced


def test_session_usage_sums_runs_per_model() -> None:
    entry = {
        "provider": "local",
        "model": "vision",
        "inputTokens": 10,
        "outputTokens": 4,
        "cost": {"currency": "USD", "input": 0.1, "output": 0.2, "total": 0.3},
    }
    summed = session_usage("s", [{"billable": entry}, {"billable": entry}, {"entries": [entry]}])
    assert summed.runs == 3
    (usage,) = summed.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (30, 12, 42)
    assert usage.cost is not None
    assert usage.cost.total == pytest.approx(0.9)
