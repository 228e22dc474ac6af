"""Iris's own estimate of a request's input tokens (the Messages API's ``count_tokens``), before any
vendor is called: text by characters, images by the model's published image formula at the size it is
sent, PDF pages and audio seconds by the vendor's published rates (``VendorFacts``); a PDF the model
does not read natively counts as its text. It also sizes a budget's hold (:mod:`.holds`), before the
run's plan exists, so it reads only what :class:`EstimateSource` names.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from iris.app.persistence.models import Message
from iris.app.runs.content.tool_results import model_text
from iris.app.runs.content.usage import attachment_tokens, image_part_estimate
from iris.providers import Capabilities, ModelSpec, Provider, ToolSpec

CHARS_PER_TOKEN = 4
"""Characters of text per token: the usual rule of thumb for the vendors' tokenizers on prose."""


class EstimateSource(Protocol):
    """What an estimate reads: a run's plan, or the pieces intake has before it makes one."""

    @property
    def system(self) -> str | None: ...
    @property
    def history(self) -> Sequence[Message]: ...
    @property
    def frontend_tools(self) -> Sequence[ToolSpec]: ...
    @property
    def provider(self) -> Provider: ...
    @property
    def model(self) -> ModelSpec: ...
    @property
    def capabilities(self) -> Capabilities: ...


def _text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def sent_parts(plan: EstimateSource) -> Iterable[Mapping[str, Any]]:
    """Every stored part the request sends: users' text and attachments, tools' outputs."""
    for row in plan.history:
        yield from row.parts or ()
        output = row.meta.get("tool_agent_output") if row.role == "tool" else None
        if output is not None:
            yield from output.get("content") or ()


def _part_tokens(part: Mapping[str, Any], plan: EstimateSource) -> int:
    kind = part.get("type")
    if kind == "image":
        estimate = image_part_estimate(part, plan.provider, plan.model, plan.capabilities)
        return int(estimate["tokens"]) if estimate else 0
    if kind == "document":
        native = attachment_tokens("document", plan.provider, float(part.get("pages") or 0))
        if native is not None and plan.capabilities.documents.pdf:
            return native
        return _text_tokens("\n".join(part.get("pageTexts") or ()))
    if kind == "audio":
        return attachment_tokens("audio", plan.provider, float(part.get("durationSeconds") or 0)) or 0
    if kind == "tool_call":
        return _text_tokens(str(part.get("name", "")) + str(part.get("arguments", "")))
    return 0


def estimate_input_tokens(plan: EstimateSource) -> int:
    """The input tokens the request ``plan`` would send its model, estimated (see the module)."""
    text = [plan.system or ""]
    for row in plan.history:
        output = row.meta.get("tool_agent_output") if row.role == "tool" else None
        text.append(model_text(output) if output is not None else row.content)
    tools = msgspec.json.encode(list(plan.frontend_tools)).decode() if plan.frontend_tools else ""
    return _text_tokens("\n".join(t for t in text if t) + tools) + sum(
        _part_tokens(p, plan) for p in sent_parts(plan)
    )
