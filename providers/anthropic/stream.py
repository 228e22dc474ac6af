"""Anthropic's SSE events as neutral events, and what an error answer means."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from iris.providers.errors import ProviderError, ProviderErrorKind
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
from iris.providers.http import chunk_json

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "other",
}
_ERROR_TYPES: dict[str, ProviderErrorKind] = {
    "authentication_error": "auth",
    "permission_error": "auth",
    "rate_limit_error": "rate_limit",
    "overloaded_error": "unavailable",
    "api_error": "unavailable",
    "timeout_error": "unavailable",
    "invalid_request_error": "bad_request",
    "not_found_error": "bad_request",
    "request_too_large": "bad_request",
}
_FETCH_FAILED = re.compile(r"\b(unable|could not|couldn't|failed) to (download|fetch)\b", re.IGNORECASE)


def could_not_fetch(status: int, body: str) -> bool:
    """Anthropic's answer when its servers cannot get an image URL: a 400 ``invalid_request_error``
    saying "Unable to download the file. Please verify the URL and try again."."""
    if status != 400:
        return False
    error = _error_object(body)
    return error.get("type") == "invalid_request_error" and bool(
        _FETCH_FAILED.search(str(error.get("message", "")))
    )


def _error_object(body: str) -> dict[str, Any]:
    """``{"type": "error", "error": {"type": …, "message": …}}`` → the inner object (or ``{}``)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) else {}


@dataclass
class _Block:
    kind: str  # "text", "tool", "thinking" or "other" (server tools: nothing neutral to say)
    id: str = ""
    has_args: bool = False
    signature: str = ""


@dataclass
class Translator:
    """Anthropic SSE events in, neutral events out; ``done`` once ``message_stop`` was seen."""

    provider: str
    done: bool = False
    blocks: dict[int, _Block] = field(default_factory=dict)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None

    def feed(self, name: str, data: str) -> list[ProviderEvent]:
        try:
            payload = chunk_json(data)
        except ValueError:
            raise ProviderError(
                "unavailable", f"malformed JSON in a {name!r} event", provider=self.provider
            ) from None
        if not isinstance(payload, dict):
            raise ProviderError("unavailable", f"malformed {name!r} event", provider=self.provider)
        kind = payload.get("type", name)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            return []  # ping, and event types newer than this code
        try:
            events: list[ProviderEvent] = handler(payload)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProviderError("unavailable", f"unexpected {kind!r} event", provider=self.provider) from exc
        return events

    def _on_message_start(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        self._usage(payload.get("message", {}).get("usage"))
        return []

    def _on_content_block_start(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        index, block = payload.get("index", 0), payload.get("content_block", {})
        if block.get("type") == "text":
            self.blocks[index] = _Block("text", f"text-{index}")
            events: list[ProviderEvent] = [TextStart(id=f"text-{index}")]
            if block.get("text"):
                events.append(TextDelta(id=f"text-{index}", delta=block["text"]))
            return events
        if block.get("type") == "tool_use":
            self.blocks[index] = _Block("tool", block["id"])
            return [ToolCallStart(id=block["id"], name=block["name"])]
        if block.get("type") == "thinking":
            self.blocks[index] = _Block(
                "thinking", f"thinking-{index}", signature=block.get("signature") or ""
            )
            started: list[ProviderEvent] = [ReasoningStart(id=f"thinking-{index}")]
            if block.get("thinking"):
                started.append(ReasoningDelta(id=f"thinking-{index}", delta=block["thinking"]))
            return started
        self.blocks[index] = _Block("other")
        if block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
            return [ReasoningOpaque(id=f"redacted-{index}", kind="redacted", value=block["data"])]
        return []

    def _on_content_block_delta(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        block, delta = self.blocks.get(payload.get("index", 0)), payload.get("delta", {})
        if block is None:
            return []
        if block.kind == "text" and delta.get("type") == "text_delta" and delta.get("text"):
            return [TextDelta(id=block.id, delta=delta["text"])]
        if block.kind == "tool" and delta.get("type") == "input_json_delta" and delta.get("partial_json"):
            block.has_args = True
            return [ToolCallArgs(id=block.id, delta=delta["partial_json"])]
        if block.kind == "thinking" and delta.get("type") == "thinking_delta" and delta.get("thinking"):
            return [ReasoningDelta(id=block.id, delta=delta["thinking"])]
        if block.kind == "thinking" and delta.get("type") == "signature_delta":
            block.signature += str(delta.get("signature", ""))
        return []

    def _on_content_block_stop(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        block = self.blocks.pop(payload.get("index", 0), None)
        if block is None or block.kind == "other":
            return []
        if block.kind == "text":
            return [TextEnd(id=block.id)]
        if block.kind == "thinking":
            signed: list[ProviderEvent] = (
                [ReasoningOpaque(id=block.id, kind="signature", value=block.signature)]
                if block.signature
                else []
            )
            return [*signed, ReasoningEnd(id=block.id)]
        # A tool without arguments streams no JSON at all; say "{}" so the arguments always parse.
        opened: list[ProviderEvent] = [] if block.has_args else [ToolCallArgs(id=block.id, delta="{}")]
        return [*opened, ToolCallEnd(id=block.id)]

    def _on_message_delta(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        delta = payload.get("delta", {})
        self.stop_reason = delta.get("stop_reason") or self.stop_reason
        self.stop_sequence = delta.get("stop_sequence") or self.stop_sequence
        self._usage(payload.get("usage"))
        return []

    def _on_message_stop(self, _payload: dict[str, Any]) -> list[ProviderEvent]:
        self.done = True
        events: list[ProviderEvent] = []
        if self.input_tokens is not None or self.output_tokens is not None:
            events.append(
                Usage(
                    input_tokens=self.input_tokens,
                    output_tokens=self.output_tokens,
                    cached_input_tokens=self.cached_tokens,
                )
            )
        reason = _STOP_REASONS.get(self.stop_reason or "", "other")
        sequence = self.stop_sequence if self.stop_reason == "stop_sequence" else None
        events.append(Finish(reason=reason, stop_sequence=sequence))
        return events

    def _on_error(self, payload: dict[str, Any]) -> list[ProviderEvent]:
        error = payload.get("error") or {}
        kind = _ERROR_TYPES.get(str(error.get("type")), "other")
        message = f"{error.get('type', 'error')}: {error.get('message', '')}"
        raise ProviderError(kind, message, provider=self.provider)

    def _usage(self, usage: Any) -> None:
        """Input counts every prompt token (cached ones too); output is cumulative, the last one wins."""
        if not isinstance(usage, dict):
            return
        parts = [
            usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        if any(isinstance(p, int) for p in parts):
            self.input_tokens = sum(p for p in parts if isinstance(p, int))
        if isinstance(usage.get("cache_read_input_tokens"), int):
            self.cached_tokens = usage["cache_read_input_tokens"]
        if isinstance(usage.get("output_tokens"), int):
            self.output_tokens = usage["output_tokens"]
