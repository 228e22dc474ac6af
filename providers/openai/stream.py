"""Streamed ``chat.completion.chunk``s as neutral events, and what an error answer means."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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

FINISH_REASONS: Mapping[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",  # the pre-tools name some compatible servers still send
    "content_filter": "content_filter",
}
_DOWNLOAD_FAILURES = ("Timeout while downloading", "Error while downloading")
_REASONING_KEYS = ("reasoning_content", "reasoning")
_ANSWER_KEYS = ("content", "refusal")


class ChunkDecoder:
    """Turns ``chat.completion.chunk`` dicts into neutral events (pure state machine, no I/O).

    Text and tool-call blocks are opened on their first delta; tool calls are keyed by ``index`` (the id
    and name come on the first delta) and all stay open until the choice finishes. ``Usage`` and
    ``Finish`` come from :meth:`finish`, once the stream's terminal marker arrived.
    """

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.response_id = ""
        self.reason: FinishReason | None = None
        self._text_id: str | None = None
        self._text_blocks = 0
        self._reasoning_id: str | None = None
        self._reasoning_blocks = 0
        self._calls: dict[int, str] = {}
        self._ended: set[int] = set()
        self._usage: Usage | None = None

    def feed(self, chunk: Mapping[str, Any]) -> list[ProviderEvent]:
        """Events for one chunk; raises ``ProviderError`` for an error object sent mid-stream."""
        error = chunk.get("error")
        if error:
            message = error.get("message", "") if isinstance(error, dict) else str(error)
            raise ProviderError("unavailable", f"error mid-stream: {message}"[:500], provider=self.provider)
        if not self.response_id and isinstance(chunk.get("id"), str):
            self.response_id = chunk["id"]
        events: list[ProviderEvent] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue  # only one choice is ever requested
            events.extend(self._delta(choice.get("delta") or {}))
            reason = choice.get("finish_reason")
            if reason:
                self.reason = FINISH_REASONS.get(reason, "other")
                events.extend(self._close_all())
        usage = chunk.get("usage")
        if isinstance(usage, dict):  # the last report wins (some servers send running totals on every chunk)
            self._usage = _usage(usage)
        return events

    def finish(self) -> list[ProviderEvent]:
        """Once the stream's terminal marker arrived: open blocks end, then usage and ``Finish``."""
        usage = [self._usage] if self._usage is not None else []
        return [*self._close_all(), *usage, Finish(reason=self.reason or "other")]

    def _delta(self, delta: Mapping[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = self._reasoning(delta)
        for key in _ANSWER_KEYS:  # a refusal is the model's answer too: show it, never drop it
            text = delta.get(key)
            if text and isinstance(text, str):
                events.extend(self._end_reasoning())
                if self._text_id is None:
                    base = self.response_id or "text"
                    self._text_id = base if self._text_blocks == 0 else f"{base}-{self._text_blocks}"
                    self._text_blocks += 1
                    events.append(TextStart(id=self._text_id))
                events.append(TextDelta(id=self._text_id, delta=text))
        for position, call in enumerate(delta.get("tool_calls") or ()):
            index = call.get("index", position)
            function = call.get("function") or {}
            if index not in self._calls and index not in self._ended:
                events.extend(self._end_reasoning())
                events.extend(self._end_text())
                call_id = call.get("id") or f"call_{index}"
                self._calls[index] = call_id
                events.append(ToolCallStart(id=call_id, name=function.get("name") or ""))
            arguments = function.get("arguments")
            if index in self._calls and isinstance(arguments, str) and arguments:
                events.append(ToolCallArgs(id=self._calls[index], delta=arguments))
        return events

    def _reasoning(self, delta: Mapping[str, Any]) -> list[ProviderEvent]:
        """Reasoning text (``reasoning_content`` or ``reasoning``) and LiteLLM's ``thinking_blocks``."""
        events: list[ProviderEvent] = []
        text = _reasoning_text(delta)
        blocks = delta.get("thinking_blocks")
        if text is None and not blocks:
            return events  # a chunk of the answer, nearly every chunk: nothing more is built for it
        blocks = [b for b in blocks or () if isinstance(b, Mapping)]
        if text is None and not blocks:
            return events
        if self._reasoning_id is None:
            self._reasoning_id = f"reasoning-{self._reasoning_blocks}"
            self._reasoning_blocks += 1
            events.append(ReasoningStart(id=self._reasoning_id))
        if text is not None:
            events.append(ReasoningDelta(id=self._reasoning_id, delta=text))
        for block in blocks:
            if block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
                events.append(ReasoningOpaque(id=self._reasoning_id, kind="redacted", value=block["data"]))
            elif isinstance(block.get("signature"), str) and block["signature"]:
                events.append(
                    ReasoningOpaque(id=self._reasoning_id, kind="signature", value=block["signature"])
                )
        return events

    def _end_reasoning(self) -> list[ProviderEvent]:
        if self._reasoning_id is None:
            return []
        reasoning_id, self._reasoning_id = self._reasoning_id, None
        return [ReasoningEnd(id=reasoning_id)]

    def _end_text(self) -> list[ProviderEvent]:
        if self._text_id is None:
            return []
        text_id, self._text_id = self._text_id, None
        return [TextEnd(id=text_id)]

    def _close_all(self) -> list[ProviderEvent]:
        events = [*self._end_reasoning(), *self._end_text()]
        for index in sorted(self._calls):
            events.append(ToolCallEnd(id=self._calls[index]))
            self._ended.add(index)
        self._calls.clear()
        return events


def _reasoning_text(delta: Mapping[str, Any]) -> str | None:
    """The delta's reasoning text under the first key that has some (``reasoning_content``, ``reasoning``)."""
    for key in _REASONING_KEYS:
        text: object = delta.get(key)
        if text and isinstance(text, str):
            return text
    return None


def _usage(usage: Mapping[str, Any]) -> Usage:
    """Chat Completions counts; the reasoning and cached details where the server reports them."""
    completion = usage.get("completion_tokens_details")
    prompt = usage.get("prompt_tokens_details")
    return Usage(
        input_tokens=usage.get("prompt_tokens"),
        output_tokens=usage.get("completion_tokens"),
        reasoning_tokens=completion.get("reasoning_tokens") if isinstance(completion, Mapping) else None,
        cached_input_tokens=prompt.get("cached_tokens") if isinstance(prompt, Mapping) else None,
    )


def could_not_fetch(status: int, body: str) -> bool:
    """OpenAI's "I could not download your image URL" 400 (a retry with inline bytes usually works)."""
    if status != 400:
        return False
    try:
        error = json.loads(body).get("error") or {}
    except (ValueError, AttributeError):
        return any(marker in body for marker in _DOWNLOAD_FAILURES)
    message = str(error.get("message") or "")
    return error.get("code") == "invalid_image_url" or any(m in message for m in _DOWNLOAD_FAILURES)


def without_key(error: ProviderError, key: str | None) -> ProviderError:
    """The same error with ``key`` blanked out of its message, in case a server echoed it back."""
    if not key or key not in error.message:
        return error
    return ProviderError(
        error.kind,
        error.message.replace(key, "***"),
        provider=error.provider,
        status=error.status,
        retry_after=error.retry_after,
    )
