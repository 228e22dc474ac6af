"""The size an image is delivered at, which is what a vendor's image formula
(:mod:`iris.providers.image_formulas`, declared by each provider) is applied to."""

from __future__ import annotations


def fitted(width: int, height: int, long_edge: int | None) -> tuple[int, int]:
    """The size of the delivered variant: the original fitted to the model's long edge (as the
    normaliser does first), never enlarged."""
    if not long_edge or max(width, height) <= long_edge:
        return width, height
    scale = long_edge / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))
