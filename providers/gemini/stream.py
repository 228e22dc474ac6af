"""Gemini's ``GenerateContentResponse`` chunks as neutral events, and what an error answer means."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

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
from iris.providers.http import chunk_json, error_for_status

_FINISH_REASONS: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
}
_STATUS_KINDS: dict[str, ProviderErrorKind] = {
    "UNAUTHENTICATED": "auth",
    "PERMISSION_DENIED": "auth",
    "RESOURCE_EXHAUSTED": "rate_limit",
    "INVALID_ARGUMENT": "bad_request",
    "FAILED_PRECONDITION": "bad_request",
    "NOT_FOUND": "bad_request",
    "UNAVAILABLE": "unavailable",
    "INTERNAL": "unavailable",
    "DEADLINE_EXCEEDED": "unavailable",
}
_FETCH_FAILED = re.compile(
    r"(invalid or unsupported file uri|unsupported file uri|cannot fetch content"
    r"|\b(unable|failed|could not) to (fetch|download))",
    re.IGNORECASE,
)
_SIGNED_QUERY = re.compile(r"(https?://[^\s?\"'\\]+)\?[^\s\"'\\]*")


def _error_object(body: str) -> dict[str, Any]:
    """``{"error": {"code", "message", "status", "details"}}`` (or a one-element list of it) → inner."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    if isinstance(parsed, list) and parsed:
        parsed = parsed[0]
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) else {}


def could_not_fetch(status: int, body: str) -> bool:
    """Google's 400 ``INVALID_ARGUMENT`` for a ``fileUri`` it would not or could not fetch ("Invalid or
    unsupported file uri: …", "Cannot fetch content from the provided URL.")."""
    if status != 400:
        return False
    error = _error_object(body)
    return bool(_FETCH_FAILED.search(str(error.get("message", "")) if error else body))


def _reasons(error: Mapping[str, Any]) -> set[str]:
    details = error.get("details")
    return (
        {str(d.get("reason")) for d in details if isinstance(d, dict) and d.get("reason")}
        if isinstance(details, list)
        else set()
    )


def _retry_delay(error: Mapping[str, Any]) -> float | None:
    """``RetryInfo.retryDelay`` ("37s") from a 429 body: Google often sends no ``retry-after``."""
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            delay = str(detail.get("retryDelay", ""))
            try:
                return float(delay.removesuffix("s"))
            except ValueError:
                return None
    return None


def status_error(provider: str, response: httpx.Response, body: str) -> ProviderError:
    """``error_for_status``, plus three Google habits: a bad key is a 400 ``API_KEY_INVALID``; a 429
    says when to retry in ``RetryInfo`` rather than in a header; and "Invalid or unsupported file
    uri: <url>" echoes the signed URL, whose query (the signature) must not reach logs."""
    error = error_for_status(
        provider, response, _SIGNED_QUERY.sub(r"\1?…", body), could_not_fetch=could_not_fetch
    )
    details = _error_object(body)
    if error.kind == "bad_request" and "API_KEY_INVALID" in _reasons(details):
        return ProviderError("auth", error.message, provider=provider, status=error.status)
    if error.kind == "rate_limit" and error.retry_after is None:
        error.retry_after = _retry_delay(details)
    return error


@dataclass
class Translator:
    """Chunks in, neutral events out; ``done`` after the chunk that carries ``finishReason``."""

    provider: str
    done: bool = False
    text_id: str | None = None
    texts: int = 0
    calls: int = 0
    thought_id: str | None = None
    thoughts: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    image_tokens: int | None = None

    def feed(self, data: str) -> list[ProviderEvent]:
        try:
            chunk = chunk_json(data)
        except ValueError:
            raise ProviderError(
                "unavailable", "malformed JSON in the stream", provider=self.provider
            ) from None
        if not isinstance(chunk, dict):
            raise ProviderError("unavailable", "malformed chunk in the stream", provider=self.provider)
        if isinstance(chunk.get("error"), dict):
            error = chunk["error"]
            kind = _STATUS_KINDS.get(str(error.get("status")), "other")
            raise ProviderError(
                kind, f"{error.get('status', 'error')}: {error.get('message', '')}", provider=self.provider
            )
        try:
            return self._chunk(chunk)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProviderError("unavailable", "unexpected chunk shape", provider=self.provider) from exc

    def _chunk(self, chunk: dict[str, Any]) -> list[ProviderEvent]:
        self._usage(chunk.get("usageMetadata"))
        events: list[ProviderEvent] = []
        candidates = chunk.get("candidates") or []
        candidate = candidates[0] if candidates and isinstance(candidates[0], dict) else {}
        response_id = str(chunk.get("responseId") or "")
        for part in (candidate.get("content") or {}).get("parts") or []:
            events.extend(self._part(part, response_id))
        finish = candidate.get("finishReason")
        if finish is None and (chunk.get("promptFeedback") or {}).get("blockReason") and not candidates:
            finish = "PROMPT_BLOCKED"  # the prompt itself was refused: no candidate will ever come
        if finish is not None:
            events.extend(self._finish(str(finish)))
        return events

    def _part(self, part: Any, response_id: str) -> list[ProviderEvent]:
        if not isinstance(part, dict):
            return []
        if part.get("thought"):  # a thought summary: reasoning, never answer text
            return self._thought(part)
        events: list[ProviderEvent] = self._close_thought()
        if isinstance(part.get("text"), str) and part["text"]:
            if self.text_id is None:
                self.text_id = f"text-{self.texts}"
                self.texts += 1
                events.append(TextStart(id=self.text_id))
            events.append(TextDelta(id=self.text_id, delta=part["text"]))
        elif isinstance(part.get("functionCall"), dict):
            events.extend(self._close_text())
            call = part["functionCall"]
            call_id = call.get("id") or (
                f"{response_id}-call-{self.calls}" if response_id else f"call-{self.calls}"
            )
            self.calls += 1
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False, separators=(",", ":"))
            events += [
                ToolCallStart(id=call_id, name=call["name"]),
                ToolCallArgs(id=call_id, delta=arguments),
                ToolCallEnd(id=call_id),
            ]
            if isinstance(part.get("thoughtSignature"), str):
                events.append(
                    ReasoningOpaque(
                        id=call_id, kind="signature", value=part["thoughtSignature"], tool_call_id=call_id
                    )
                )
        return events

    def _thought(self, part: dict[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        if self.thought_id is None:
            events += self._close_text()
            self.thought_id = f"thought-{self.thoughts}"
            self.thoughts += 1
            events.append(ReasoningStart(id=self.thought_id))
        if isinstance(part.get("text"), str) and part["text"]:
            events.append(ReasoningDelta(id=self.thought_id, delta=part["text"]))
        return events

    def _close_thought(self) -> list[ProviderEvent]:
        if self.thought_id is None:
            return []
        thought_id, self.thought_id = self.thought_id, None
        return [ReasoningEnd(id=thought_id)]

    def _close_text(self) -> list[ProviderEvent]:
        if self.text_id is None:
            return []
        text_id, self.text_id = self.text_id, None
        return [TextEnd(id=text_id)]

    def _finish(self, reason: str) -> list[ProviderEvent]:
        self.done = True
        events = [*self._close_thought(), *self._close_text()]
        if self.input_tokens is not None or self.output_tokens is not None:
            events.append(
                Usage(
                    input_tokens=self.input_tokens,
                    output_tokens=self.output_tokens,
                    reasoning_tokens=self.reasoning_tokens,
                    cached_input_tokens=self.cached_tokens,
                    image_tokens=self.image_tokens,
                )
            )
        mapped: FinishReason
        if reason == "STOP" and self.calls:
            mapped = "tool_calls"
        elif reason == "PROMPT_BLOCKED":
            mapped = "content_filter"
        else:
            mapped = _FINISH_REASONS.get(reason, "other")
        events.append(Finish(reason=mapped))
        return events

    def _usage(self, usage: Any) -> None:
        """Counts are cumulative, the last chunk's win; thinking tokens are billed as output."""
        if not isinstance(usage, dict):
            return
        if isinstance(usage.get("promptTokenCount"), int):
            self.input_tokens = usage["promptTokenCount"]
        outputs = [usage.get(k) for k in ("candidatesTokenCount", "thoughtsTokenCount")]
        if any(isinstance(o, int) for o in outputs):
            self.output_tokens = sum(o for o in outputs if isinstance(o, int))
        if isinstance(usage.get("thoughtsTokenCount"), int):
            self.reasoning_tokens = usage["thoughtsTokenCount"]
        if isinstance(usage.get("cachedContentTokenCount"), int):
            self.cached_tokens = usage["cachedContentTokenCount"]
        images = [
            d.get("tokenCount")
            for d in usage.get("promptTokensDetails") or ()
            if isinstance(d, dict) and d.get("modality") == "IMAGE"
        ]
        if any(isinstance(i, int) for i in images):
            self.image_tokens = sum(i for i in images if isinstance(i, int))
