"""OpenAI Chat Completions and compatible servers; the code is in :mod:`providers.openai.provider`."""

from providers.openai.provider import (
    DEFAULT_BASE_URL,
    DETAIL,
    FINISH_REASONS,
    IMAGE_MIME_TYPES,
    KEY_ENV,
    MAX_REQUEST_BYTES,
    MODEL_OPTIONS,
    ChunkDecoder,
    OpenAIProvider,
    chat_messages,
    chat_request,
    chat_tools,
    could_not_fetch,
    create,
    reasoning_support,
    without_key,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DETAIL",
    "FINISH_REASONS",
    "IMAGE_MIME_TYPES",
    "KEY_ENV",
    "MAX_REQUEST_BYTES",
    "MODEL_OPTIONS",
    "ChunkDecoder",
    "OpenAIProvider",
    "chat_messages",
    "chat_request",
    "chat_tools",
    "could_not_fetch",
    "create",
    "reasoning_support",
    "without_key",
]
