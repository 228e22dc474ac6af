"""The OpenTelemetry GenAI semantic conventions as Iris uses them: attribute names and the opt-in content
attributes (a vendor's ``gen_ai.provider.name`` is what its provider declares,
:mod:`iris.providers.vendor_facts`).

Status "Development" in the conventions; these are the names as of 2026 (``gen_ai.provider.name``,
not the deprecated ``gen_ai.system``; ``gen_ai.usage.input_tokens``/``output_tokens``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from iris.providers import (
    ImagePart,
    Message,
    ProviderError,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
CONVERSATION = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
CACHED_TOKENS = "gen_ai.usage.cache_read.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
ERROR_TYPE = "error.type"


def error_type(exc: BaseException) -> str:
    """``error.type``: Iris's stable code where the failure has one, else the exception's type."""
    if isinstance(exc, ProviderError):
        return f"provider_{exc.kind}"
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) else type(exc).__qualname__


def _part(part: object) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "content": part.text}
    if isinstance(part, ImagePart):  # never the bytes: what was sent, not the image itself
        return {"type": "image", "mime_type": part.mime_type, "delivery": "url" if part.url else "inline"}
    if isinstance(part, ToolCallPart):
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": part.arguments}
    if isinstance(part, ToolResultPart):
        return {"type": "tool_call_response", "id": part.tool_call_id, "response": part.content}
    if isinstance(part, ReasoningPart):
        return {"type": "reasoning", "content": part.text or ""}
    return {"type": type(part).__name__}


def input_messages(messages: Sequence[Message]) -> str:
    """``gen_ai.input.messages``: the request's messages as the conventions' JSON (images by type only)."""
    return json.dumps([{"role": m.role, "parts": [_part(p) for p in m.parts]} for m in messages])


def output_messages(answer: str, calls: Sequence[tuple[str, str, str]], finish_reason: str) -> str:
    """``gen_ai.output.messages``: the turn's answer and tool calls (``(id, name, arguments)``)."""
    parts: list[dict[str, Any]] = [{"type": "text", "content": answer}] if answer else []
    parts += [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}])
