"""``GET /v1/models`` as Anthropic's clients read it: the same catalogue, in Anthropic's list shape
(``data`` items ``{type: "model", id, display_name, created_at}`` with ``first_id``, ``last_id`` and
``has_more``). A request that carries ``anthropic-version`` or ``x-api-key`` (what the Anthropic SDKs
and Claude Code send) gets this shape; any other the OpenAI one."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from litestar import Request

from iris.app.api.anthropic.wire import AnthropicModel, AnthropicModels
from iris.app.persistence.models import ModelRow


def wants_anthropic(request: Request[Any, Any, Any]) -> bool:
    """Whether the caller is an Anthropic client (its SDKs always send ``anthropic-version``)."""
    return "anthropic-version" in request.headers or "x-api-key" in request.headers


def anthropic_model(row: ModelRow) -> AnthropicModel:
    created = row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=dt.UTC)
    stamp = created.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    return AnthropicModel(id=row.ref, display_name=row.name, created_at=stamp)


def anthropic_models(rows: Sequence[ModelRow]) -> AnthropicModels:
    """Every model on one page (``has_more`` false)."""
    data = [anthropic_model(row) for row in rows]
    return AnthropicModels(
        data=data, first_id=data[0].id if data else None, last_id=data[-1].id if data else None
    )
