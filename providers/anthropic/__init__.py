"""Anthropic's Messages API: ``POST {base}/v1/messages`` with ``"stream": true``, answered as SSE.

Images go as Anthropic's own ``image`` blocks (base64 or ``url`` source), tools as ``tools`` with
``input_schema``, tool results as ``tool_result`` blocks in a user turn. Anthropic wants roles to
alternate, so consecutive turns that land on the same role are merged.

Extended thinking: asked to reason, the body carries ``thinking: {type: "enabled", budget_tokens}``
(``max_tokens`` grows to hold the budget; no temperature, which thinking refuses). ``thinking`` blocks
stream as reasoning (``thinking_delta``), their ``signature_delta`` as the opaque signature, and
``redacted_thinking`` as an opaque block with no text. Thinking blocks go back unchanged, signature
and all, in the assistant turn a tool-use continuation answers (the vendor requires it); earlier
turns' thinking is dropped, as the vendor allows.

The body is built in :mod:`iris.providers.anthropic.request`, the events translated in
:mod:`iris.providers.anthropic.stream`; :mod:`iris.providers.anthropic.provider` holds the provider joining
them.
"""

from iris.providers.anthropic.provider import (
    API_VERSION,
    BASE_URL_ENV,
    DEFAULT_BASE_URL,
    IMAGE_MIME_TYPES,
    KEY_ENV,
    MAX_IMAGE_BASE64_BYTES,
    MAX_IMAGE_EDGE_PX,
    MAX_IMAGES,
    MAX_REQUEST_BYTES,
    MODEL_OPTIONS,
    RECOMMENDED_LONG_EDGE_PX,
    AnthropicProvider,
    create,
)
from iris.providers.anthropic.request import DEFAULT_MAX_TOKENS, EXTRA_OPTIONS, MIN_THINKING_BUDGET
from iris.providers.anthropic.stream import could_not_fetch

__all__ = [
    "API_VERSION",
    "BASE_URL_ENV",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "EXTRA_OPTIONS",
    "IMAGE_MIME_TYPES",
    "KEY_ENV",
    "MAX_IMAGES",
    "MAX_IMAGE_BASE64_BYTES",
    "MAX_IMAGE_EDGE_PX",
    "MAX_REQUEST_BYTES",
    "MIN_THINKING_BUDGET",
    "MODEL_OPTIONS",
    "RECOMMENDED_LONG_EDGE_PX",
    "AnthropicProvider",
    "could_not_fetch",
    "create",
]
