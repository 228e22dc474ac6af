"""OpenAI Chat Completions (``POST {base}/chat/completions``) streamed as SSE ``chat.completion.chunk``s.

Also speaks to OpenAI-compatible servers (OpenRouter, vLLM, LM Studio…): point ``baseUrl`` at them,
name their key variable with ``apiKeyEnv`` or set ``noKey``. The message mapping (:func:`chat_messages`)
and the chunk decoder (:class:`ChunkDecoder`) are pure and shared with the LiteLLM provider, which takes
the same OpenAI shapes.

Reasoning: asked to reason, a model that can (o-series and GPT-5 by name, or ``options["reasoning"]``
on a compatible server) gets ``reasoning_effort``. OpenAI itself streams no reasoning text in Chat
Completions, but reports ``completion_tokens_details.reasoning_tokens``; compatible servers stream it
as ``reasoning_content`` (DeepSeek, vLLM) or ``reasoning`` (OpenRouter, Ollama) deltas, and LiteLLM
adds Anthropic's signed ``thinking_blocks``, which go back unchanged on the assistant turn a tool-use
continuation answers (only there: DeepSeek refuses ``reasoning_content`` sent back).

The body is built in :mod:`iris.providers.openai.request`, the chunks decoded in
:mod:`iris.providers.openai.stream`, and :mod:`iris.providers.openai.provider` holds the provider that joins
them.
"""

from iris.providers.openai.provider import (
    DEFAULT_BASE_URL,
    DETAIL,
    IMAGE_MIME_TYPES,
    KEY_ENV,
    MAX_REQUEST_BYTES,
    MODEL_OPTIONS,
    OpenAIProvider,
    create,
    reasoning_support,
)
from iris.providers.openai.request import chat_messages, chat_request, chat_tools
from iris.providers.openai.stream import FINISH_REASONS, ChunkDecoder, could_not_fetch, without_key

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
