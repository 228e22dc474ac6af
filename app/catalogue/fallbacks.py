"""The check of a model's ``fallbacks``, shared by the admin API and the models file: each names another
catalogue model, once. What a run then does with them is :mod:`iris.app.runs.intake.fallbacks`'."""

from __future__ import annotations

from collections.abc import Sequence

from iris.app.errors import Unprocessable
from iris.app.persistence.repositories import ModelRepository


async def check_fallbacks(refs: Sequence[str], own_ref: str, models: ModelRepository) -> None:
    """422 ``invalid_fallback`` for the model itself or a ref listed twice, 422 ``fallback_not_found``
    for a ref no catalogue model has (a fallback's own fallbacks are never followed)."""
    seen: set[str] = set()
    for index, ref in enumerate(refs):
        where = f"fallbacks[{index}]"
        if ref == own_ref:
            raise Unprocessable(
                f"{own_ref} cannot fall back to itself.", code="invalid_fallback", field=where
            )
        if ref in seen:
            raise Unprocessable(f"{ref} is listed twice.", code="invalid_fallback", field=where)
        seen.add(ref)
        if await models.get_by_ref(ref) is None:
            raise Unprocessable(
                f"No model {ref!r} in the catalogue to fall back to.", code="fallback_not_found", field=where
            )
